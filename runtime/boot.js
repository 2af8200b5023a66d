// boot.js: how hull starts node (`node -e <this>`); fd 0 holds "PROGRAM" (see cell.js)
(()=>{const fs=require("fs"),b=fs.readFileSync(0,"utf8").split("\0");fs.closeSync(0);if(fs.openSync("/dev/null","r")!==0)process.exit(2);process.title="hull-node";require("vm").runInThisContext(b[0],{filename:"[eval]"})})()
