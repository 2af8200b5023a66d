/* dr-xml.h: libxml2 helpers hull-docread's Office, OpenDocument and HTML readers share. */
#pragma once

#include <stdbool.h>

#include "docread.h"
#include "dr-lib.h"

/* An XML document from untrusted bytes: no network, no entity substitution, no DTD loading. */
xmlDoc *dr_xml_parse(const char *buf, size_t len);
/* Is n the element called name (its local name)? */
bool dr_xml_is(const xmlNode *n, const char *name);
/* The first child element called name, or NULL. */
xmlNode *dr_xml_child(const xmlNode *n, const char *name);
/* Attribute name (any namespace) as a malloc'd string, or NULL. */
char *dr_xml_attr(const xmlNode *n, const char *name);
/* Append the text under n to b: text nodes, with tab/br/s/line-break elements as tab, newline
 * and space, a newline after each paragraph element (p). */
int dr_xml_text(const xmlNode *n, dynbuf *b);
