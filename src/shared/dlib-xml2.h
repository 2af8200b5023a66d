/* dlib-xml2.h: libxml2 (libxml2.so.2) through the loader (dlib.h), for its HTML parser
 * (src/shared/html-text: web pages to readable text).
 *
 * Why libxml2: an HTML parser that recovers from any tag soup the way browsers' older parsers
 * did, decodes entities and character sets, and builds a tree with bounds of its own; hull must
 * not write an HTML tokenizer. Why not linked: only web_fetch needs it, and every hull command
 * would map it (and its ICU, lzma and zlib) at start.
 *
 * Loading runs xmlInitParser once (the loader's init), which libxml2 wants done before parsers
 * run on several threads. Call dlib_xml2_load() before the first call; the macros below turn
 * the usual names into the table's pointers. */
#pragma once

#include <libxml/HTMLparser.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

#include "dlib.h"

#define DLIB_XML2_FUNCS(X)                                                                                             \
        X(htmlReadMemory)                                                                                              \
        X(xmlFreeDoc)                                                                                                  \
        X(xmlInitParser)                                                                                               \
        X(xmlSetGenericErrorFunc)                                                                                      \
        X(xmlSetStructuredErrorFunc)

typedef struct dlib_xml2 {
#define X(f) __typeof__(f) *f;
        DLIB_XML2_FUNCS(X)
#undef X
} dlib_xml2;

/* The table: written once by dlib_load(DLIB_XML2), read-only after. */
extern dlib_xml2 dlib_xml2_api;

/* dlib_load(DLIB_XML2, e), typed: the table, or NULL with *e filled (-ENOSYS). */
static inline const dlib_xml2 *dlib_xml2_load(hull_error *e) {
        return dlib_load(DLIB_XML2, e) < 0 ? NULL : &dlib_xml2_api;
}

#ifndef DLIB_NO_MACROS
#define htmlReadMemory (dlib_xml2_api.htmlReadMemory)
#define xmlFreeDoc (dlib_xml2_api.xmlFreeDoc)
#define xmlInitParser (dlib_xml2_api.xmlInitParser)
#define xmlSetGenericErrorFunc (dlib_xml2_api.xmlSetGenericErrorFunc)
#define xmlSetStructuredErrorFunc (dlib_xml2_api.xmlSetStructuredErrorFunc)
#endif
