// cell.js: hull's JavaScript cell driver. The host runs it inside a session's sandbox as
// `/usr/bin/node -e <runtime/boot.js>` with fd 0 a sealed memfd holding this source: boot.js reads
// it, puts /dev/null on fd 0, names the process hull-node (process.title: ps shows that, not the
// source) and runs this in the same context.
//
//   fd 0 /dev/null; fd 1, fd 2 the session's output pipes; fd 3 the control socket.
//   Frames on fd 3, both ways: u32 little-endian length N (1..64 MiB), then N bytes of UTF-8 JSON.
//   driver -> host  {"hello":{"pid":P,"language":"javascript","version":"20.x.y"}}
//   host -> driver  {"cell":{"code":"..."}}
//   driver -> host  {"done":{"status":0|1}}   after everything the cell wrote is in the pipes
//   EOF on fd 3: exit 0. A frame length out of bounds: exit 2.
//
// One persistent vm context. The completion value is awaited when it is a thenable and printed
// with util.inspect unless undefined. Code that fails to compile and mentions `await` is run as
// the body of an async function (top-level await; its declarations do not persist).
// Node has no fcntl: fd 3 cannot be marked close-on-exec here, but libuv's spawn (the only way
// node starts processes) does not pass it on; the test suite checks that.
'use strict';
const fs = require('fs');
const vm = require('vm');
const util = require('util');
const Module = require('module');
const { Writable } = require('stream');

const CTL = 3;
const MAX_FRAME = 64 * 1024 * 1024;
const sleepCell = new Int32Array(new SharedArrayBuffer(4));

function sleepMs(ms) {
        Atomics.wait(sleepCell, 0, 0, ms);
}

function writeAll(fd, data) {
        const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
        let off = 0;
        while (off < buf.length) {
                try {
                        off += fs.writeSync(fd, buf, off, buf.length - off);
                } catch (e) {
                        if (e.code === 'EAGAIN' || e.code === 'EINTR') {
                                sleepMs(1);
                                continue;
                        }
                        if (fd === CTL) throw e;
                        return; // a closed output pipe: the host is gone, fd 3 will say so
                }
        }
}

function readExact(n) {
        const buf = Buffer.alloc(n);
        let off = 0;
        while (off < n) {
                let got;
                try {
                        got = fs.readSync(CTL, buf, off, n - off, null);
                } catch (e) {
                        if (e.code === 'EAGAIN' || e.code === 'EINTR') {
                                sleepMs(1);
                                continue;
                        }
                        throw e;
                }
                if (got === 0) {
                        if (off === 0) return null;
                        process.exit(2);
                }
                off += got;
        }
        return buf;
}

function sendFrame(obj) {
        const body = Buffer.from(JSON.stringify(obj), 'utf8');
        const head = Buffer.alloc(4);
        head.writeUInt32LE(body.length, 0);
        writeAll(CTL, Buffer.concat([head, body]));
}

function recvFrame() {
        const head = readExact(4);
        if (head === null) return null;
        const n = head.readUInt32LE(0);
        if (n < 1 || n > MAX_FRAME) process.exit(2);
        const body = readExact(n);
        if (body === null) process.exit(2);
        return body;
}

// An output stream for console.Console and for process.stdout/stderr in a cell: every write goes
// to the fd synchronously (the callback runs at once, so the Writable never buffers).
function outStream(fd) {
        const s = new Writable({
                decodeStrings: true,
                write(chunk, encoding, cb) {
                        writeAll(fd, chunk);
                        cb();
                },
        });
        s.fd = fd;
        s.isTTY = false;
        return s;
}

const stdout = outStream(1);
const stderr = outStream(2);
const cellConsole = new console.Console({ stdout, stderr, colorMode: false });

class ProcessExitError extends Error {}

const cellProcess = {
        env: process.env,
        argv: [process.execPath],
        execPath: process.execPath,
        pid: process.pid,
        ppid: process.ppid,
        platform: process.platform,
        arch: process.arch,
        version: process.version,
        versions: process.versions,
        release: process.release,
        stdout,
        stderr,
        exitCode: undefined,
        cwd: () => process.cwd(),
        chdir: (d) => process.chdir(d),
        exit: (code) => {
                throw new ProcessExitError('process.exit(' + (code === undefined ? '' : code) +
                        ') is not allowed in a cell: the interpreter is shared by every cell');
        },
        abort: () => { throw new ProcessExitError('process.abort() is not allowed in a cell'); },
        hrtime: process.hrtime,
        uptime: () => process.uptime(),
        memoryUsage: () => process.memoryUsage(),
        cpuUsage: (p) => process.cpuUsage(p),
        nextTick: (fn, ...args) => process.nextTick(fn, ...args),
        umask: (m) => process.umask(m),
        getuid: () => process.getuid(),
        getgid: () => process.getgid(),
        kill: (pid, sig) => process.kill(pid, sig),
        emitWarning: (w) => cellConsole.error(String(w)),
        on() { return cellProcess; },
        once() { return cellProcess; },
        off() { return cellProcess; },
};

const sandbox = {
        console: cellConsole,
        require: Module.createRequire('/workspace/'),
        process: cellProcess,
        Buffer, URL, URLSearchParams, TextEncoder, TextDecoder,
        setTimeout, clearTimeout, setInterval, clearInterval, setImmediate, clearImmediate,
        queueMicrotask, structuredClone, atob, btoa,
        AbortController, AbortSignal, Event, EventTarget,
};
if (typeof fetch === 'function') sandbox.fetch = fetch;
if (typeof performance === 'object') sandbox.performance = performance;
if (typeof crypto === 'object') sandbox.crypto = crypto;
const context = vm.createContext(sandbox);
vm.runInContext('globalThis.global = globalThis;', context);

function describeError(err) {
        let text;
        try {
                if (err && typeof err.stack === 'string') {
                        // Keep the cell's frames, leave out the driver's and node's internals.
                        text = err.stack.split('\n').filter((l) => !(/^\s+at /.test(l) &&
                                /(node:|\[eval\]|evalmachine\.<anonymous>)/.test(l))).join('\n');
                } else {
                        text = 'Uncaught ' + util.inspect(err);
                }
        } catch (e) {
                text = 'Uncaught exception (cannot be displayed)';
        }
        return text + '\n';
}

// Errors outside a cell's own run (a timer's callback, an unhandled rejection) are shown and
// do not end the interpreter.
process.on('uncaughtException', (err) => writeAll(2, describeError(err)));
process.on('unhandledRejection', (err) => writeAll(2, describeError(err)));

function isThenable(v) {
        return v !== null && (typeof v === 'object' || typeof v === 'function') &&
                typeof v.then === 'function';
}

async function runCell(code) {
        let script;
        let wrapped = false;
        try {
                script = new vm.Script(code, { filename: 'cell' });
        } catch (err) {
                if (!(err && err.name === 'SyntaxError' && /\bawait\b/.test(code))) throw err;
                script = new vm.Script('(async () => {\n' + code + '\n})()', { filename: 'cell' });
                wrapped = true;
        }
        let value = script.runInContext(context, { displayErrors: false });
        if (isThenable(value)) value = await value;
        if (!wrapped && value !== undefined) writeAll(1, util.inspect(value) + '\n');
}

async function main() {
        sendFrame({ hello: { pid: process.pid, language: 'javascript', version: process.versions.node } });
        const decoder = new TextDecoder('utf-8', { fatal: true });
        for (;;) {
                const body = recvFrame();
                if (body === null) process.exit(0);
                let code = null;
                try {
                        const msg = JSON.parse(decoder.decode(body));
                        const cell = msg && typeof msg === 'object' ? msg.cell : undefined;
                        if (cell && typeof cell === 'object' && typeof cell.code === 'string') code = cell.code;
                } catch (e) {
                        code = null;
                }
                let status = 0;
                if (code === null) {
                        writeAll(2, 'hull: cell driver: not a cell frame\n');
                        status = 1;
                } else {
                        try {
                                await runCell(code);
                        } catch (err) {
                                writeAll(2, describeError(err));
                                status = 1;
                        }
                        // One turn of the event loop: immediates the cell queued run within it.
                        await new Promise((resolve) => setImmediate(resolve));
                }
                sendFrame({ done: { status } });
        }
}

main().catch((err) => {
        try { writeAll(2, describeError(err)); } catch (e) { /* nothing left to tell */ }
        process.exit(1);
});
