#!/usr/bin/env python3
"""make-corpus.py DIR: the documents tests/integration/test-read-document.sh reads, generated
here (nothing downloaded, no licence but the project's): PDFs written by hand (a born-digital
one with a table, a two-column one, a scanned page, hostile ones), Office files and OpenDocument
files through zipfile, Markdown and HTML. The scanned page is rendered from text with pdftoppm
(poppler-utils); its words are in scan-words.txt for the accuracy check. With --bench it also
writes bench-100.pdf (100 pages, a table on each) and bench-100k.xlsx (100,000 rows)."""
import os
import subprocess
import sys
import zipfile
import zlib

# ---- PDF ----


def pdf_bytes(objects):
    """objects: list of bytes (object bodies, numbered from 1); object 1 is the catalog."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for o in offsets:
        out += b"%010d 00000 n \n" % o
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def esc(s):
    return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def text_pdf(pages, outline=()):
    """pages: list of lists of (x, y, size, text) (y from the top of a Letter page); outline:
    (title, page index) bookmarks, one level."""
    n = len(pages)
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", None,
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>"]
    kids = []
    for items in pages:
        ops = []
        for x, y, size, text, *bold in items:
            font = "F2" if bold and bold[0] else "F1"
            ops.append("BT /%s %g Tf %g %g Td (%s) Tj ET" % (font, size, x, 792 - y, esc(text)))
        stream = "\n".join(ops).encode("latin-1")
        objs.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        content = len(objs)
        objs.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
                    b"/Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> >>" % content)
        kids.append(len(objs))
    objs[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), n)
    if outline:
        root = len(objs) + 1
        first = root + 1
        objs[0] = b"<< /Type /Catalog /Pages 2 0 R /Outlines %d 0 R >>" % root
        objs.append(b"<< /Type /Outlines /First %d 0 R /Last %d 0 R /Count %d >>" %
                    (first, first + len(outline) - 1, len(outline)))
        for i, (title, page) in enumerate(outline):
            links = (b" /Prev %d 0 R" % (first + i - 1) if i > 0 else b"") + \
                    (b" /Next %d 0 R" % (first + i + 1) if i + 1 < len(outline) else b"")
            objs.append(b"<< /Title (%s) /Parent %d 0 R /Dest [%d 0 R /XYZ 0 792 0]%s >>" %
                        (esc(title).encode("latin-1"), root, kids[page], links))
    return pdf_bytes(objs)


TABLE = [("Region", "Quarter", "Revenue", "Units"),
         ("North", "Q1", "1250.50", "31"),
         ("South", "Q1", "980.25", "22"),
         ("East", "Q2", "1432.00", "40"),
         ("West", "Q2", "1101.75", "27")]


def table_page(title, intro):
    items = [(72, 80, 20, title, True), (72, 110, 11, intro)]
    y = 150
    for row in TABLE:
        for x, cell in zip((72, 200, 320, 440), row):
            items.append((x, y, 11, cell, row is TABLE[0]))
        y += 18
    items.append((72, y + 30, 11, "Revenue grew in every region after the new pricing."))
    return items


PROSE_L = ["The left column starts the story of", "a harbour town whose boats went out",
           "before dawn and came back at noon", "with the catch of the day in crates", "LEFTEND of the first column here."]
PROSE_R = ["RIGHTSTART the second column tells", "how the market opened after the", "boats came in and the fish were sold",
           "to the cooks of the town by evening", "and the nets were mended at night."]


def twocol_page():
    items = [(72, 80, 20, "Two Columns", True)]
    for i, (l, r) in enumerate(zip(PROSE_L, PROSE_R)):
        items.append((72, 120 + 14 * i, 10, l))
        items.append((330, 120 + 14 * i, 10, r))
    return items


SCAN_TEXT = ["The quarterly report shows steady growth", "across all four regions of the company.",
             "Revenue rose by twelve percent while costs", "remained flat through the second quarter.",
             "The board approved the plan for next year."]


def image_pdf(gray, w, h):
    data = zlib.compress(gray)
    content = b"q %d 0 0 %d 0 0 cm /Im1 Do Q" % (612, 792)
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
            b"/Resources << /XObject << /Im1 5 0 R >> >> >>",
            b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
            b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray "
            b"/BitsPerComponent 8 /Filter /FlateDecode /Length %d >>\nstream\n" % (w, h, len(data)) + data
            + b"\nendstream"]
    return pdf_bytes(objs)


def read_pgm(path):
    with open(path, "rb") as f:
        data = f.read()
    parts = data.split(maxsplit=4)
    assert parts[0] == b"P5"
    w, h = int(parts[1]), int(parts[2])
    return parts[4][-w * h:], w, h


def scan(d):
    src = os.path.join(d, "scan-src.pdf")
    with open(src, "wb") as f:
        f.write(text_pdf([[(72, 100 + 24 * i, 14, line) for i, line in enumerate(SCAN_TEXT)]]))
    subprocess.run(["pdftoppm", "-r", "200", "-gray", "-singlefile", src, os.path.join(d, "scan")], check=True)
    subprocess.run(["pdftoppm", "-r", "200", "-png", "-singlefile", src, os.path.join(d, "scan")], check=True)
    gray, w, h = read_pgm(os.path.join(d, "scan.pgm"))
    with open(os.path.join(d, "scan.pdf"), "wb") as f:
        f.write(image_pdf(gray, w, h))
    os.unlink(os.path.join(d, "scan.pgm"))
    os.unlink(src)
    with open(os.path.join(d, "scan-words.txt"), "w") as f:
        f.write(" ".join(SCAN_TEXT) + "\n")


def hostile_pdfs(d):
    good = text_pdf([table_page("Sales", "Quarterly sales by region.")])
    with open(os.path.join(d, "truncated.pdf"), "wb") as f:
        f.write(good[: len(good) // 3])
    # a page tree whose Kids hold itself, and an object that refers to itself
    loop = pdf_bytes([b"<< /Type /Catalog /Pages 2 0 R >>",
                      b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>",
                      b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R >>"])
    with open(os.path.join(d, "recursive.pdf"), "wb") as f:
        f.write(loop)
    # 6000 real (empty) pages: more than hull reads at once
    n = 6000
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", None]
    kids = []
    for i in range(n):
        objs.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>")
        kids.append(len(objs))
    objs[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), n)
    with open(os.path.join(d, "many-pages.pdf"), "wb") as f:
        f.write(pdf_bytes(objs))
    # 20 pages whose 3rd and 12th are not pages (their Kids entries numbers, not references):
    # "page 3 cannot be read", whichever threads read them
    pdf = text_pdf([[(72, 80, 11, "Page %d of a damaged file." % (i + 1))] for i in range(20)])
    a = pdf.index(b"/Kids [") + 7
    e = pdf.index(b"]", a)
    refs = pdf[a:e].split(b" ")  # "n", "0", "R" a page: page k's reference is refs[3k-3:3k]
    for k in (12, 3):  # the later first: each shortens the list
        refs[3 * k - 3:3 * k] = [refs[3 * k - 3] + b"   ", b""]  # the same length: the xref holds
    kids = b" ".join(refs)
    with open(os.path.join(d, "damaged-page.pdf"), "wb") as f:
        f.write(pdf[:a] + kids + pdf[e:])


# ---- Office Open XML and OpenDocument ----

CT = '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' \
     '<Default Extension="xml" ContentType="application/xml"/></Types>'
W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def docx(path):
    def p(text, style=None):
        ppr = '<w:pPr><w:pStyle w:val="%s"/></w:pPr>' % style if style else ""
        return '<w:p>%s<w:r><w:t xml:space="preserve">%s</w:t></w:r></w:p>' % (ppr, text)

    def tc(text):
        return "<w:tc>%s</w:tc>" % p(text)

    rows = "".join("<w:tr>%s</w:tr>" % "".join(tc(c) for c in row) for row in TABLE)
    body = (p("Annual Report", "Title") + p("Sales", "Heading1") + p("Sales by region and quarter follow.")
            + "<w:tbl>%s</w:tbl>" % rows + p("Outlook", "Heading2") + p("Next year looks bright."))
    doc = '<?xml version="1.0" encoding="UTF-8"?><w:document %s><w:body>%s</w:body></w:document>' % (W, body)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", CT)
        z.writestr("word/document.xml", doc)


def col_name(i):
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = chr(65 + r) + s
    return s


def xlsx(path, sheets):
    """sheets: list of (name, rows); a cell is int, float, bool, str, or ('date', serial)."""
    strings, index = [], {}

    def cell(ref, v):
        if isinstance(v, bool):
            return '<c r="%s" t="b"><v>%d</v></c>' % (ref, v)
        if isinstance(v, (int, float)):
            return '<c r="%s"><v>%s</v></c>' % (ref, repr(v))
        if isinstance(v, tuple):
            return '<c r="%s" s="1"><v>%s</v></c>' % (ref, v[1])
        if v not in index:
            index[v] = len(strings)
            strings.append(v)
        return '<c r="%s" t="s"><v>%d</v></c>' % (ref, index[v])

    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", CT)
        wb, rels = [], []
        for i, (name, rows) in enumerate(sheets, 1):
            wb.append('<sheet name="%s" sheetId="%d" r:id="rId%d"/>' % (name, i, i))
            rels.append('<Relationship Id="rId%d" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
                        'relationships/worksheet" Target="worksheets/sheet%d.xml"/>' % (i, i))
            body = "".join('<row r="%d">%s</row>' % (r + 1, "".join(cell("%s%d" % (col_name(c), r + 1), v)
                                                                      for c, v in enumerate(row)))
                           for r, row in enumerate(rows))
            z.writestr("xl/worksheets/sheet%d.xml" % i,
                       '<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/'
                       'spreadsheetml/2006/main"><sheetData>%s</sheetData></worksheet>' % body)
        z.writestr("xl/workbook.xml",
                   '<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/'
                   'spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/'
                   'relationships"><sheets>%s</sheets></workbook>' % "".join(wb))
        z.writestr("xl/_rels/workbook.xml.rels",
                   '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/'
                   'package/2006/relationships">%s</Relationships>' % "".join(rels))
        z.writestr("xl/styles.xml",
                   '<?xml version="1.0" encoding="UTF-8"?><styleSheet xmlns="http://schemas.openxmlformats.org/'
                   'spreadsheetml/2006/main"><cellXfs count="2"><xf numFmtId="0"/><xf numFmtId="14"/></cellXfs>'
                   '</styleSheet>')
        z.writestr("xl/sharedStrings.xml",
                   '<?xml version="1.0" encoding="UTF-8"?><sst xmlns="http://schemas.openxmlformats.org/'
                   'spreadsheetml/2006/main">%s</sst>' % "".join("<si><t>%s</t></si>" % s for s in strings))


def pptx(path):
    A = 'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"'
    P = 'xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"'
    R = 'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"'

    def sp(text, title=False):
        ph = '<p:nvPr><p:ph type="title"/></p:nvPr>' if title else "<p:nvPr/>"
        return ('<p:sp><p:nvSpPr><p:cNvPr id="1" name="t"/><p:cNvSpPr/>%s</p:nvSpPr><p:txBody><a:p><a:r><a:t>%s'
                '</a:t></a:r></a:p></p:txBody></p:sp>' % (ph, text))

    tbl = "<p:graphicFrame><a:graphic><a:graphicData><a:tbl>%s</a:tbl></a:graphicData></a:graphic></p:graphicFrame>" % \
        "".join("<a:tr>%s</a:tr>" % "".join("<a:tc><a:txBody><a:p><a:r><a:t>%s</a:t></a:r></a:p></a:txBody></a:tc>" % c
                                            for c in row) for row in TABLE)
    slides = [sp("Quarterly Review", True) + sp("Prepared for the board"),
              sp("Sales by Region", True) + tbl,
              sp("Next Steps", True) + sp("Hire two engineers")]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", CT)
        ids, rels = [], []
        for i, body in enumerate(slides, 1):
            ids.append('<p:sldId id="%d" r:id="rId%d"/>' % (255 + i, i))
            rels.append('<Relationship Id="rId%d" Type="slide" Target="slides/slide%d.xml"/>' % (i, i))
            z.writestr("ppt/slides/slide%d.xml" % i,
                       '<?xml version="1.0" encoding="UTF-8"?><p:sld %s %s %s><p:cSld><p:spTree>%s</p:spTree>'
                       '</p:cSld></p:sld>' % (A, P, R, body))
        z.writestr("ppt/presentation.xml", '<?xml version="1.0" encoding="UTF-8"?><p:presentation %s %s>'
                   '<p:sldIdLst>%s</p:sldIdLst></p:presentation>' % (P, R, "".join(ids)))
        z.writestr("ppt/_rels/presentation.xml.rels",
                   '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/'
                   'package/2006/relationships">%s</Relationships>' % "".join(rels))


def ods(path):
    NS = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
          'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
          'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"')

    def cell(v):
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return ('<table:table-cell office:value-type="float" office:value="%s"><text:p>%s</text:p>'
                    '</table:table-cell>' % (v, v))
        return '<table:table-cell office:value-type="string"><text:p>%s</text:p></table:table-cell>' % v

    rows = [("item", "qty"), ("bolts", 12), ("nuts", 30)]
    body = "".join("<table:table-row>%s</table:table-row>" % "".join(cell(v) for v in r) for r in rows)
    body += '<table:table-row table:number-rows-repeated="1048000"><table:table-cell/></table:table-row>'
    content = ('<?xml version="1.0" encoding="UTF-8"?><office:document-content %s><office:body><office:spreadsheet>'
               '<table:table table:name="Stock">%s</table:table></office:spreadsheet></office:body>'
               '</office:document-content>' % (NS, body))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.spreadsheet")
        z.writestr("content.xml", content)


def bomb(path):
    """A .docx whose document.xml expands to 160 MiB (of spaces, 160 KiB compressed), past the
    parser's bound on one entry."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr("[Content_Types].xml", CT)
        with z.open("word/document.xml", "w", force_zip64=True) as f:
            f.write(('<?xml version="1.0"?><w:document %s><w:body><w:p><w:r><w:t>' % W).encode())
            chunk = b" " * (1 << 20)
            for _ in range(160):
                f.write(chunk)
            f.write(b"</w:t></w:r></w:p></w:body></w:document>")


def main():
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "table.pdf"), "wb") as f:
        f.write(text_pdf([table_page("Quarterly Sales", "Sales by region for the first half of the year."),
                          [(72, 80, 20, "Notes", True), (72, 110, 11, "All figures are in thousands.")]]))
    with open(os.path.join(d, "twocol.pdf"), "wb") as f:
        f.write(text_pdf([twocol_page()]))
    scan(d)
    hostile_pdfs(d)
    docx(os.path.join(d, "report.docx"))
    xlsx(os.path.join(d, "book.xlsx"), [
        ("Sales", [("region", "amount", "units", "paid", "day")] +
         [(r, a, u, p, ("date", s)) for r, a, u, p, s in
          [("North", 1250.5, 31, True, 45292), ("South", 980.25, 22, False, 45293), ("East", 1432.0, 40, True, 45294)]]),
        ("People", [("name", "age"), ("Ada", 36), ("Linus", 54)]),
        ("Empty Start", [(), ("code", "label"), (1, "one"), (2, "two")])])
    pptx(os.path.join(d, "deck.pptx"))
    ods(os.path.join(d, "stock.ods"))
    bomb(os.path.join(d, "bomb.docx"))
    with open(os.path.join(d, "notes.md"), "w") as f:
        f.write("# Notes\n\nSome text.\n\n## Numbers\n\n| k | v |\n|---|---|\n| a | 1 |\n| b | 2 |\n")
    with open(os.path.join(d, "page.html"), "w") as f:
        f.write("<!doctype html><html><head><title>t</title><script>var x=1;</script></head><body><h1>Prices</h1>"
                "<p>Current prices.</p><table><thead><tr><th>fruit</th><th>price</th></tr></thead><tbody>"
                "<tr><td>apple</td><td>1.5</td></tr><tr><td>pear</td><td>2.25</td></tr></tbody></table></body></html>")
    # 12 pages, a table and a heading on each: read on several threads, as one thread does; the
    # same with an outline (its headings read once, the font sizes then not gathered)
    sections = [table_page("Section %d" % (i + 1), "Figures for section %d." % (i + 1)) for i in range(12)]
    with open(os.path.join(d, "sections.pdf"), "wb") as f:
        f.write(text_pdf(sections))
    with open(os.path.join(d, "sections-outline.pdf"), "wb") as f:
        f.write(text_pdf(sections, [("Part %d" % (i + 1), 3 * i) for i in range(4)]))
    # 300 tables: past DOCREAD_TABLES_MAX (256)
    with open(os.path.join(d, "tables-300.pdf"), "wb") as f:
        f.write(text_pdf([table_page("Part %d" % (i + 1), "Part %d of many." % (i + 1)) for i in range(300)]))
    with open(os.path.join(d, "garbage.bin"), "wb") as f:
        f.write(bytes(range(256)) * 4)
    if "--bench" in sys.argv:
        pages = []
        for i in range(100):
            items = table_page("Section %d" % (i + 1), "Figures for section %d follow." % (i + 1))
            for k in range(30):
                items.append((72, 300 + 14 * k, 10, "Line %d of the running text on page %d, set in a plain "
                                                    "paragraph for the benchmark." % (k + 1, i + 1)))
            pages.append(items)
        with open(os.path.join(d, "bench-100.pdf"), "wb") as f:
            f.write(text_pdf(pages))
        rows = [("id", "name", "amount", "ok", "day")]
        rows += [(i, "name%d" % (i % 5000), round(i * 1.25, 2), i % 3 == 0, ("date", 45000 + i % 3000))
                 for i in range(100000)]
        xlsx(os.path.join(d, "bench-100k.xlsx"), [("Data", rows)])
        with open(os.path.join(d, "bench-100k.csv"), "w") as f:
            import datetime
            base = datetime.date(1899, 12, 30)
            for r in rows:
                f.write(",".join(str(base + datetime.timedelta(days=v[1])) if isinstance(v, tuple)
                                 else ("true" if v is True else "false" if v is False else str(v)) for v in r) + "\n")


if __name__ == "__main__":
    main()
