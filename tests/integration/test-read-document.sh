# test-read-document.sh: read_document end to end (issue 25): `hull run` against `hull mock-model`
# reads a generated corpus (tests/docs/make-corpus.py) through the tool, the parser running in
# its container sandbox: a born-digital PDF's table queried with SQL, a two-column PDF in reading
# order, a scanned PDF and an image read by OCR (word accuracy >= 95 %), .docx, .xlsx (three
# sheets, typed columns), .pptx, .ods, Markdown and HTML tables; truncated, recursive, 6000-page,
# zip-bomb and garbage files each a clear error within the bounds; a stand-in parser shows what
# the sandbox leaves it (its own pid namespace, no host files, no network) and an answer out of
# shape is refused. hull mcp offers the tool.
source "$(dirname "$0")/../lib.sh"
DOCS=$(cd "$(dirname "$0")/../docs" && pwd)

PY=/usr/bin/python3
export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"
unset OPENAI_API_KEY ANTHROPIC_API_KEY HULL_API_KEY HULL_MODEL HULL_BASE_URL HULL_PROVIDER HULL_DOCREAD 2>/dev/null
cd "$TEST_TMP" || exit 1

if [ "$(id -u)" != 0 ] && ! unshare -U true 2>/dev/null; then
        skip "read_document" "no user namespaces here: the parser's sandbox cannot start"
        exit 0
fi
for t in pdftoppm tesseract; do
        command -v $t >/dev/null || { skip "read_document" "$t is not installed (scripts/install-deps.sh)"; exit 0; }
done
C=$TEST_TMP/corpus
"$PY" "$DOCS/make-corpus.py" "$C" || { fail "the corpus is generated" "make-corpus.py failed"; exit 0; }
cp "$C/scan.png" "$C/photo.png"

O=$TEST_TMP/out
E=$TEST_TMP/err
mock() {
        : >"$TEST_TMP/requests.jsonl"
        mock_start "$1" --record "$TEST_TMP/requests.jsonl" --log-level error
}
run_hull() {
        local t0 t1
        t0=$(date +%s%N)
        HULL_PROVIDER=anthropic HULL_BASE_URL=$MURL HULL_API_KEY=k HULL_MODEL=mock-model \
                timeout 300 "$HULL" run "$@" >"$O" 2>"$E" </dev/null
        RC=$?
        t1=$(date +%s%N)
        SECS=$(((t1 - t0) / 1000000000))
}
# pyexpect NAME EXPR: r[i] is the i-th tool result (text, is_error) of the last request; o, e, j
# the command's stdout, stderr and stdout as JSON; C the corpus.
pyexpect() {
        if RC=$RC SECS=$SECS "$PY" - "$O" "$TEST_TMP/requests.jsonl" "$C" "$2" "$E" <<'PYEOF'; then pass "$1"; else fail "$1" "rc=$RC $(head -c 400 "$O") $(tail -c 600 "$E")"; fi
import json, os, re, sys
o = open(sys.argv[1]).read()
try:
    j = json.loads(o)
except ValueError:
    j = None
reqs = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
C = sys.argv[3]
e = open(sys.argv[5]).read()
rc, secs = int(os.environ["RC"]), int(os.environ["SECS"])
def results(req):
    out = []
    for m in req["body"]["messages"]:
        if m.get("role") == "user" and isinstance(m.get("content"), list):
            for b in m["content"]:
                if b.get("type") == "tool_result":
                    c = b.get("content")
                    out.append((c if isinstance(c, str) else "".join(p.get("text", "") for p in (c or [])), bool(b.get("is_error"))))
    return out
r = results(reqs[-1]) if reqs else []
def accuracy(got, want):
    g = re.findall(r"[a-z]+", got.lower())
    w = re.findall(r"[a-z]+", want.lower())
    hits = sum(1 for x in w if x in g)
    return hits / len(w)
sys.exit(0 if eval(sys.argv[4]) else 1)
PYEOF
}

doc() { printf '{"name":"read_document","input":{"path":"/workspace/inputs/%s"%s}}' "$1" "${2:-}"; }
calls=(
        "$(doc table/table.pdf)" "$(doc twocol/twocol.pdf)" "$(doc scan/scan.pdf ',"ocr":true')"
        "$(doc report/report.docx)" "$(doc book/book.xlsx)" "$(doc deck/deck.pptx)" "$(doc stock/stock.ods)"
        "$(doc notes/notes.md)" "$(doc page/page.html)" "$(doc truncated/truncated.pdf)"
        "$(doc recursive/recursive.pdf)" "$(doc many_pages/many-pages.pdf)" "$(doc bomb/bomb.docx)"
        "$(doc garbage/garbage.bin)" "$(doc photo/photo.png ',"ocr":true')" "$(doc scan/scan.pdf)"
        "$(doc scan/scan.pdf ',"ocr_languages":"xyz","ocr":true')"
)
step1=$(
        IFS=,
        echo "${calls[*]}"
)
mock '{"steps":[{"tool_calls":['"$step1"']},
 {"tool_calls":[
  {"name":"query_handle","input":{"sql":"SELECT Region FROM h2 WHERE Units > 30 ORDER BY Region"}},
  {"name":"read_handle","input":{"handle_id":"h3"}},
  {"name":"read_handle","input":{"handle_id":"h4"}},
  {"name":"query_handle","input":{"sql":"SELECT sum(units) AS u, min(day) AS d, typeof(amount) AS t FROM h8 WHERE paid"}},
  {"name":"query_handle","input":{"sql":"SELECT sum(age) AS a FROM h9"}},
  {"name":"query_handle","input":{"sql":"SELECT count(*) AS n FROM h6 JOIN h12 USING (Region)"}},
  {"name":"query_handle","input":{"sql":"SELECT sum(qty) AS q FROM h14"}},
  {"name":"read_handle","input":{"handle_id":"h19"}}]},
 {"text":"done"}]}' || { fail "mock-model starts" "$(cat "$TEST_TMP/mock.err")"; exit 0; }
inputs=()
for f in table.pdf twocol.pdf scan.pdf report.docx book.xlsx deck.pptx stock.ods notes.md page.html truncated.pdf \
        recursive.pdf many-pages.pdf bomb.docx garbage.bin photo.png; do
        inputs+=(--input "$C/$f")
done
run_hull "read the documents" "${inputs[@]}" --json
pyexpect "read_document: the run ends, every document read or refused within the bounds" \
        'rc == 0 and j and j["answer"] == "done" and len(reqs) == 3 and secs < 240'
# the last request carries every tool result: r[0..16] step 1's, r[17..24] step 2's
pyexpect "read_document: a born-digital PDF: pages, headings, one table with typed columns" \
        'not r[0][1] and "pdf, 2 pages (2 read), 1 table" in r[0][0] and "\"Quarterly Sales\"" in r[0][0] and "h2: p1_t1, page 1, 4 rows: Region text, Quarter text, Revenue real, Units integer" in r[0][0]'
pyexpect "read_document: docx: headings and its table" \
        'not r[3][1] and "\"Annual Report\"" in r[3][0] and "\"Outlook\"" in r[3][0] and "h6: table_1, 4 rows: Region text" in r[3][0]'
pyexpect "read_document: xlsx: three sheets, each a table with typed columns" \
        'not r[4][1] and "3 tables" in r[4][0] and "h8: Sales, page 1, 3 rows: region text, amount real, units integer, paid boolean, day date" in r[4][0] and "h9: People, page 2, 2 rows: name text, age integer" in r[4][0] and "h10: Empty Start, page 3, 2 rows: code integer, label text" in r[4][0]'
pyexpect "read_document: pptx: slide titles as headings, its table" \
        'not r[5][1] and "pptx, 3 pages" in r[5][0] and "p2 \"Sales by Region\"" in r[5][0] and "h12: slide2_t1, page 2, 4 rows" in r[5][0]'
pyexpect "read_document: ods, Markdown and HTML tables" \
        'not r[6][1] and "h14: Stock, page 1, 2 rows: item text, qty integer" in r[6][0] and "h16: table_1, page 1, 2 rows: k text, v integer" in r[7][0] and "h18: table_1, page 1, 2 rows: fruit text, price real" in r[8][0]'
pyexpect "read_document: a truncated PDF is a clear error" 'r[9][1] and "damaged" in r[9][0]'
pyexpect "read_document: a PDF whose page tree holds itself is a clear error" 'r[10][1] and "damaged" in r[10][0]'
pyexpect "read_document: 6000 pages are refused, saying how to ask for some" 'r[11][1] and "6000 pages" in r[11][0] and "pages" in r[11][0]'
pyexpect "read_document: a zip bomb is refused before it expands" 'r[12][1] and "zip bomb" in r[12][0]'
pyexpect "read_document: garbage is not a document, and the error lists what is" 'r[13][1] and "PDF" in r[13][0] and "docx" in r[13][0]'
pyexpect "read_document: an image read by OCR" 'not r[14][1] and "image, 1 page (1 read), text by OCR" in r[14][0]'
pyexpect "read_document: a scan without ocr says to ask for it" 'not r[15][1] and "ocr: true" in r[15][0]'
pyexpect "read_document: an OCR language not installed is named, with the installed ones" 'r[16][1] and "xyz" in r[16][0] and "eng" in r[16][0]'
pyexpect "query_handle over a PDF table" 'not r[17][1] and "East" in r[17][0] and "North" in r[17][0] and "South" not in r[17][0]'
pyexpect "read_document: two columns come in reading order" \
        '"LEFTEND" in r[18][0] and "RIGHTSTART" in r[18][0] and r[18][0].index("LEFTEND") < r[18][0].index("RIGHTSTART") and r[18][0].index("harbour") < r[18][0].index("LEFTEND")'
pyexpect "read_document: a scanned PDF by OCR, word accuracy >= 95 %" \
        'accuracy(r[19][0], open(C + "/scan-words.txt").read()) >= 0.95'
pyexpect "query_handle over an xlsx sheet: booleans, dates and reals kept" \
        '"71" in r[20][0] and "2024-01-01" in r[20][0] and "real" in r[20][0]'
pyexpect "query_handle over a second sheet" '"90" in r[21][0]'
pyexpect "query_handle joins a docx table and a pptx table" '"\"n\"" in r[22][0] and "[4]" in r[22][0]'
pyexpect "query_handle over an ods sheet" '"42" in r[23][0]'
pyexpect "read_document: an image by OCR, word accuracy >= 95 %" \
        'accuracy(r[24][0], open(C + "/scan-words.txt").read()) >= 0.95'
mock_stop >/dev/null

# ---- the sandbox around the parser: a stand-in parser reports what it can reach ----
mkdir -p "$TEST_TMP/probe"
echo "host-secret-$$" >"$TEST_TMP/secret.txt"
hostns=$(readlink /proc/self/ns/pid)
cat >"$TEST_TMP/probe/hull-docread" <<PROBE
#!/bin/sh
# proves it is sandboxed first: a pid namespace other than the host's
ns=host; [ "\$(readlink /proc/self/ns/pid)" != "$hostns" ] && ns=own
cat "$TEST_TMP/secret.txt" >/dev/null 2>&1 && secret=read || secret=unreachable
(exec 3<>/dev/tcp/127.0.0.1/9) 2>/dev/null && net=yes || net=none
printf '{"format":"text","pages":1,"pages_read":1,"ocr":false,"text":"pidns=%s secret=%s net=%s cpus=%s %s","headings":[],"tables":[],"notes":[]}' "\$ns" "\$secret" "\$net" "\$(env -u OMP_THREAD_LIMIT nproc)" "\$GLIBC_TUNABLES"
PROBE
chmod 755 "$TEST_TMP/probe/hull-docread"
mkdir -p "$TEST_TMP/evil"
printf '#!/bin/sh\necho %s\n' "'{\"format\":\"evil\",\"pages\":1}'" >"$TEST_TMP/evil/hull-docread"
chmod 755 "$TEST_TMP/evil/hull-docread"
printf 'hello\n' >"$TEST_TMP/hello.txt"
mock '{"steps":[{"tool_calls":['"$(doc hello/hello.txt)"']},{"tool_calls":[{"name":"read_handle","input":{"handle_id":"h1"}}]},{"text":"done"}]}' ||
        fail "mock-model starts" "$(cat "$TEST_TMP/mock.err")"
HULL_DOCREAD=$TEST_TMP/probe/hull-docread run_hull "probe" --input "$TEST_TMP/hello.txt" --json
pyexpect "read_document: the parser runs in its own pid namespace, without the host's files or network" \
        'rc == 0 and "pidns=own" in r[1][0] and "secret=unreachable" in r[1][0] and "net=none" in r[1][0] and "host-secret" not in o'
# the CPUs the parser may use (its threads read a PDF's pages; nproc itself heeds OMP_THREAD_LIMIT,
# which is for tesseract), and glibc's malloc tuned to keep the small chunks poppler frees and
# makes again page after page (DOCREAD_MALLOC_TUNABLES)
pyexpect "read_document: the parser sees the host's $(nproc) CPUs, and its malloc keeps 65535 chunks a size" \
        'rc == 0 and ("cpus=%d glibc.malloc.tcache_count=65535" % len(os.sched_getaffinity(0))) in r[1][0]'
mock_stop >/dev/null
mock '{"steps":[{"tool_calls":['"$(doc hello/hello.txt)"']},{"text":"done"}]}' || fail "mock-model starts" "$(cat "$TEST_TMP/mock.err")"
HULL_DOCREAD=$TEST_TMP/evil/hull-docread run_hull "evil" --input "$TEST_TMP/hello.txt" --json
pyexpect "read_document: a parser answer out of shape is refused" 'rc == 0 and r[0][1] and "refused" in r[0][0]'
mock_stop >/dev/null

# ---- hull read-document: the same reading on the command line ----
HULL_DOCUMENT_OCR=1 timeout 120 "$HULL" read-document "$C/scan.pdf" --json >"$O" 2>"$E"
RC=$? SECS=0
pyexpect "hull read-document: HULL_DOCUMENT_OCR=1 turns OCR on by default" \
        'rc == 0 and j["ocr"] is True and accuracy(j["text"], open(C + "/scan-words.txt").read()) >= 0.95'
timeout 120 "$HULL" read-document "$C/scan.pdf" >"$O" 2>"$E"
RC=$? SECS=0
pyexpect "hull read-document: without it, a scan is named as one" 'rc == 0 and "ocr: true" in o'
timeout 120 "$HULL" read-document "$C/book.xlsx" --handles "$TEST_TMP/hs" >"$O" 2>"$E"
RC=$? SECS=0
pyexpect "hull read-document --handles: every sheet a table handle in the store" \
        'rc == 0 and "h2: Sales, page 1, 3 rows" in o and os.path.exists(os.path.dirname(sys.argv[1]) + "/hs/h4.sqlite")'
timeout 120 "$HULL" read-document "$C/bomb.docx" >"$O" 2>"$E"
RC=$? SECS=0
pyexpect "hull read-document: a refused document exits 1 saying why" 'rc == 1 and "zip bomb" in e'

# ---- what start-up costs: OCR's libraries are opened only when OCR is asked for ----
# (linked, tesseract and leptonica pull in 56 libraries, curl, TLS and Kerberos among them,
# ~9 ms of every document's start-up; the OCR reads above show dlopen works in the sandbox)
DOCREAD_BIN=$(dirname "$HULL")/hull-docread
# (and libxml2 and libarchive, with ICU and four more, only for Office, OpenDocument and HTML:
# 50 libraries at start instead of 58, ~2 ms of every PDF's parse; the Office and HTML reads
# above show they open in the sandbox)
LD_TRACE_LOADED_OBJECTS=1 "$DOCREAD_BIN" >"$O" 2>"$E" </dev/null
check "hull-docread: tesseract, leptonica and curl are not loaded at start" \
        sh -c 'grep -q libpoppler "$1" && ! grep -qE "libtesseract|liblept|libcurl" "$1"' sh "$O"
check "hull-docread: libxml2, libarchive and ICU are not loaded at start, 52 libraries at most" \
        sh -c 'n=$(grep -c "=>" "$1"); echo "libraries: $n"; grep -q libpoppler "$1" &&
               ! grep -qE "libxml2|libarchive|libicu" "$1" && [ "$n" -le 52 ]' sh "$O"

# ---- what a PDF's parse costs beyond poppler's own work (counts, not times) ----
# hull asks for the text beside the JSON (--text-apart): its JSON parser lexes a character at a
# time, and the text is most of a document's answer (jansson spent ~40M instructions on the
# 100-page bench PDF's); none of the body's text may be in the JSON hull parses
"$DOCREAD_BIN" --text-apart --name twocol.pdf <"$C/twocol.pdf" >"$O" 2>"$E"
RC=$?
check "hull-docread --text-apart: the text follows the JSON, which does not hold it" \
        "$PY" -c '
import json, sys
raw = open(sys.argv[2], "rb").read().decode("utf-8")
obj, end = json.JSONDecoder().raw_decode(raw)
text = raw[end + 1:]
words = [w for w in " ".join(text.split("\n")[2:]).split() if len(w) > 3]  # the body, not the heading
sys.exit(not (sys.argv[1] == "0" and "text" not in obj and obj["text_bytes"] == len(text.encode()) and
              raw[end] == "\n" and text.startswith("[page 1]\n") and len(words) > 20 and
              not any(w in raw[:end] for w in words)))' "$RC" "$O"
# ... and hull takes the text beside the JSON only when it is exactly what the JSON announces
# (stand-in parsers: each prints the answer beside it, /env/answer in the sandbox)
"$PY" - "$TEST_TMP" <<'PYA'
import os, sys
j = ('{"format":"text","pages":1,"pages_read":1,"ocr":false,"text_bytes":%d,'
     '"headings":[],"tables":[],"notes":[]%s}\n')
cases = {"good": j % (6, "") + "hello\n", "short": j % (9, "") + "hello\n",
         "badutf8": (j % (5, "")).encode() + b"ab\xffcd", "both": j % (6, ',"text":"x"') + "hello\n",
         "nul": (j % (5, "")).encode() + b"ab\0cd"}
for name, answer in cases.items():
    d = os.path.join(sys.argv[1], "apart-" + name)
    os.makedirs(d, exist_ok=True)
    with open(d + "/answer", "wb") as f:
        f.write(answer if isinstance(answer, bytes) else answer.encode())
    with open(d + "/hull-docread", "w") as f:
        f.write("#!/bin/sh\ncat /env/answer\n")
    os.chmod(d + "/hull-docread", 0o755)
PYA
for name in good short badutf8 both nul; do
        HULL_DOCREAD=$TEST_TMP/apart-$name/hull-docread timeout 60 "$HULL" read-document "$TEST_TMP/hello.txt" --json \
                >"$TEST_TMP/apart-$name.out" 2>"$TEST_TMP/apart-$name.err"
        echo $? >"$TEST_TMP/apart-$name.rc"
done
check "hull: a parser's text beside its JSON is taken when its length and UTF-8 are right" \
        "$PY" -c 'import json,sys; sys.exit(open(sys.argv[1] + ".rc").read().strip() != "0" or
                  list(json.load(open(sys.argv[1] + ".out")).items())[3:5] != [("ocr", False), ("text", "hello\n")])' \
        "$TEST_TMP/apart-good"
for name in short badutf8 both nul; do
        check "hull: a parser's text beside its JSON is refused: $name" \
                sh -c '[ "$(cat "$1.rc")" = 1 ] && grep -q "not JSON" "$1.err"' sh "$TEST_TMP/apart-$name"
done
# poppler makes and frees a few hundred thousand small objects a page: malloc keeps its heap
# (mallopt in hull-docread) instead of growing and trimming it with brk page after page (main
# before: 38 brk calls for these 2000 pages, 239 for the bench PDF's 100)
if command -v strace >/dev/null; then
        strace -f -e trace=brk -o "$TEST_TMP/brk.txt" "$DOCREAD_BIN" --pages 1-2000 <"$C/many-pages.pdf" >"$O" 2>"$E"
        check "hull-docread: a 2000-page parse calls brk at most 12 times" \
                sh -c 'n=$(grep -c "brk(" "$1"); echo "brk calls: $n"; [ "$n" -le 12 ]' sh "$TEST_TMP/brk.txt"
else
        skip "hull-docread: brk calls of a 2000-page parse" "strace is not installed"
fi

# ---- a PDF's pages are read on several threads, the answer the one-thread answer ----
# each thread its own poppler document, the parts joined in page order; a read that meets a
# document-wide bound (tables, notes, text) or fails is read again on one thread (--threads N
# forces the count, --stats prints it; hull passes neither)
"$DOCREAD_BIN" --stats <"$C/sections.pdf" >"$O" 2>"$E"
want=$(nproc)
want=$((want > 3 ? 3 : want)) # 12 pages: a thread for 4 pages at least, DOCREAD_THREADS_MAX 4
check "hull-docread: a 12-page PDF is read on min(CPUs, 3) threads" \
        sh -c 'echo "$(cat "$1"), want $2"; grep -qx "threads $2" "$1"' sh "$E" "$want"
same_threads() { # FILE [OPTIONS...]: 0 when the answers on 2 and 4 threads are the one on 1 (stats in $E.N)
        local f=$1 t
        shift
        "$DOCREAD_BIN" --threads 1 "$@" <"$f" >"$O.1" 2>/dev/null
        for t in 2 4; do
                "$DOCREAD_BIN" --threads $t --stats "$@" <"$f" >"$O.$t" 2>"$E.$t"
                cmp -s "$O.1" "$O.$t" || return 1
        done
}
same=0
for i in $(seq 20); do same_threads "$C/sections.pdf" && same=$((same + 1)); done
check "hull-docread: 12 pages on 2 and 4 threads, the same bytes as on 1 (20 times of 20)" \
        sh -c 'echo "same: $1, $(cat "$2")"; [ "$1" = 20 ] && grep -qx "threads 4" "$2"' sh "$same" "$E.4"
same_threads "$C/sections.pdf" --pages 2-5,7,9-
check "hull-docread: some pages on 4 threads, the same bytes as on 1" \
        sh -c '[ "$1" = 0 ] && grep -qx "threads 4" "$2"' sh $? "$E.4"
same_threads "$C/sections-outline.pdf"
check "hull-docread: 12 pages with an outline on 4 threads, the same bytes as on 1, its 4 headings" \
        sh -c '[ "$1" = 0 ] && grep -qx "threads 4" "$2" && [ "$(grep -o "\"level\":1" "$3" | wc -l)" = 4 ]' \
        sh $? "$E.4" "$O.4"
same_threads "$C/damaged-page.pdf"
check "hull-docread: pages 3 and 12 damaged, 2 and 4 threads: page 3 named, as on one thread" \
        sh -c '[ "$1" = 0 ] && grep -q "page 3 cannot be read" "$2"' sh $? "$O.4"
same_threads "$C/tables-300.pdf"
check "hull-docread: 300 tables, 2 and 4 threads: 256 kept, the rest noted, as on one thread (read again)" \
        sh -c '[ "$1" = 0 ] && grep -qx "threads 1" "$3" && "$4" -c "import json, sys; j = json.load(open(sys.argv[1]))
sys.exit(not (len(j[\"tables\"]) == 256 and j[\"notes\"][0].startswith(\"more than 256 tables: table p257_t1 \")))" "$2"' \
        sh $? "$O.4" "$E.4" "$PY"
for p in 1-1999:4 1-2000:1; do # a note for each page without text: 2000 is DOCREAD_HEADINGS_MAX
        same_threads "$C/many-pages.pdf" --pages "${p%:*}"
        check "hull-docread: pages ${p%:*} without text, 4 threads: the notes as on one thread (threads ${p#*:})" \
                sh -c '[ "$1" = 0 ] && [ "$(grep -o "has no text layer" "$2" | wc -l)" = "$3" ] && grep -qx "threads $4" "$5"' \
                sh $? "$O.4" "${p:2:4}" "${p#*:}" "$E.4"
done

# ---- a worksheet is read by SAX2 callbacks (no node built per cell) ----
# the same state as before for what spreadsheets write; an empty <v/> no longer makes the
# parser collect the text of the elements after it (a formula's), and a DTD is refused
"$PY" - "$C/book.xlsx" "$TEST_TMP" <<'PYX'
import sys, zipfile
src = zipfile.ZipFile(sys.argv[1])
ws = '<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
sheets = {
    "emptyv": ws + '<sheetData><row r="1"><c r="A1" t="str"><v/><f>SUM(B1)</f></c><c r="B1"><v>2</v></c></row>'
              '<row><c t="inlineStr"><is><r><t>a</t></r><r><t xml:space="preserve"> &amp; b</t></r></is></c>'
              '<c><v>4</v></c></row></sheetData></worksheet>',
    "dtd": '<?xml version="1.0"?><!DOCTYPE worksheet [<!ENTITY e "x">]>' + ws[21:] +
           '<sheetData><row r="1"><c r="A1" t="str"><v>a&e;</v></c></row></sheetData></worksheet>',
}
for name, xml in sheets.items():
    with zipfile.ZipFile(sys.argv[2] + "/" + name + ".xlsx", "w", zipfile.ZIP_DEFLATED) as out:
        for i in src.infolist():
            out.writestr(i.filename, xml if i.filename == "xl/worksheets/sheet1.xml" else src.read(i.filename))
PYX
"$DOCREAD_BIN" <"$TEST_TMP/emptyv.xlsx" >"$O" 2>"$E"
check "hull-docread: an empty <v/> is an empty value, inline strings keep their runs" \
        "$PY" -c 'import json,sys; t=json.load(open(sys.argv[1]))["tables"][0]; sys.exit(t["csv"] != "col_1,2\na & b,4\n")' "$O"
"$DOCREAD_BIN" <"$TEST_TMP/dtd.xlsx" >"$O" 2>"$E"
RC=$?
check "hull-docread: a worksheet with a DTD is refused, saying so" sh -c '[ "$1" = 1 ] && grep -q "declares a DTD" "$2"' sh "$RC" "$O"

# ---- hull mcp offers it ----
printf '%s\n%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
        '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' | timeout 30 "$HULL" mcp >"$O" 2>"$E"
check "hull mcp lists read_document" grep -q '"name":"read_document"' "$O"
