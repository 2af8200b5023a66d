/* dr-xml.c: libxml2 helpers for hull-docread's readers (dr-xml.h). */
#include <errno.h>
#include <string.h>

#include "dr-xml.h"

xmlDoc *dr_xml_parse(const char *buf, size_t len) {
        if (len > INT32_MAX)
                return NULL;
        return xmlReadMemory(buf, (int) len, NULL, NULL, XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
}

bool dr_xml_is(const xmlNode *n, const char *name) {
        return n && n->type == XML_ELEMENT_NODE && strcmp((const char *) n->name, name) == 0;
}

xmlNode *dr_xml_child(const xmlNode *n, const char *name) {
        for (xmlNode *c = n ? n->children : NULL; c; c = c->next)
                if (dr_xml_is(c, name))
                        return c;
        return NULL;
}

char *dr_xml_attr(const xmlNode *n, const char *name) {
        return (char *) xmlGetProp((xmlNode *) n, (const xmlChar *) name);
}

static int text_rec(const xmlNode *n, dynbuf *b, unsigned depth) {
        int r = 0;
        if (depth > 256)
                return 0;
        for (const xmlNode *c = n->children; c && r >= 0; c = c->next) {
                if (c->type == XML_TEXT_NODE || c->type == XML_CDATA_SECTION_NODE) {
                        if (c->content)
                                r = dynbuf_add_str(b, (const char *) c->content);
                } else if (c->type == XML_ELEMENT_NODE) {
                        const char *nm = (const char *) c->name;
                        if (strcmp(nm, "tab") == 0)
                                r = dynbuf_add(b, "\t", 1);
                        else if (strcmp(nm, "br") == 0 || strcmp(nm, "line-break") == 0 || strcmp(nm, "cr") == 0)
                                r = dynbuf_add(b, "\n", 1);
                        else if (strcmp(nm, "s") == 0)
                                r = dynbuf_add(b, " ", 1);
                        else if (strcmp(nm, "instrText") == 0 || strcmp(nm, "delText") == 0 ||
                                 strcmp(nm, "annotation") == 0)
                                continue;
                        else {
                                r = text_rec(c, b, depth + 1);
                                if (r >= 0 && strcmp(nm, "p") == 0)
                                        r = dynbuf_add(b, "\n", 1);
                        }
                }
        }
        return r;
}

int dr_xml_text(const xmlNode *n, dynbuf *b) {
        return text_rec(n, b, 0);
}
