/* dr-lib.h: libxml2 and libarchive for hull-docread's Office, OpenDocument and HTML readers,
 * opened (dlopen) when such a document is read, not linked. Linked, they and what they pull in
 * (ICU, nettle, acl, lz4, bzip2: 8 of the 58 libraries a PDF's parse started with) were loaded
 * and relocated before every PDF too: ~4M instructions, ~2 ms of each parse.
 *
 * hull's own table of them is src/shared/dlib (dlib-xml2.h, dlib-archive.h); hull-docread is a
 * program of its own that may use only src/basic (scripts/check-tree.py), so it keeps this small
 * one, with only the functions its readers call.
 *
 * Include this header instead of libxml2's and libarchive's: the macros below turn the usual
 * names into the table's pointers. Call dr_lib_load() before the first call. */
#pragma once

#include <archive.h>
#include <archive_entry.h>
#include <libxml/HTMLparser.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include "docread.h"

#define DR_LIB_XML2_FUNCS(X)                                                                                           \
        X(htmlReadMemory)                                                                                              \
        X(xmlCreatePushParserCtxt)                                                                                     \
        X(xmlCtxtUseOptions)                                                                                           \
        X(xmlDocGetRootElement)                                                                                        \
        X(xmlFreeDoc)                                                                                                  \
        X(xmlFreeParserCtxt)                                                                                           \
        X(xmlGetProp)                                                                                                  \
        X(xmlInitParser)                                                                                               \
        X(xmlParseChunk)                                                                                               \
        X(xmlReadMemory)                                                                                               \
        X(xmlStopParser)

#define DR_LIB_ARCHIVE_FUNCS(X)                                                                                        \
        X(archive_entry_filetype)                                                                                      \
        X(archive_entry_pathname)                                                                                      \
        X(archive_entry_size)                                                                                          \
        X(archive_entry_size_is_set)                                                                                   \
        X(archive_error_string)                                                                                        \
        X(archive_read_data)                                                                                           \
        X(archive_read_free)                                                                                           \
        X(archive_read_new)                                                                                            \
        X(archive_read_next_header)                                                                                    \
        X(archive_read_open_memory)                                                                                    \
        X(archive_read_support_format_zip)

typedef struct dr_lib {
        bool loaded;
#define X(f) __typeof__(f) *f;
        DR_LIB_XML2_FUNCS(X)
        DR_LIB_ARCHIVE_FUNCS(X)
#undef X
} dr_lib;

/* The table: written once by dr_lib_load (hull-docread has one thread), read-only after; the
 * same accepted exception to "no global mutable state" as src/shared/dlib.c's. */
extern dr_lib dr_lib_api;

/* Open both libraries (once; xmlInitParser run) and fill dr_lib_api. Returns 0, or -ENOENT with
 * d's error naming the Debian packages. */
int dr_lib_load(dr_doc *d);

#ifndef DR_LIB_NO_MACROS
#define htmlReadMemory (dr_lib_api.htmlReadMemory)
#define xmlCreatePushParserCtxt (dr_lib_api.xmlCreatePushParserCtxt)
#define xmlCtxtUseOptions (dr_lib_api.xmlCtxtUseOptions)
#define xmlDocGetRootElement (dr_lib_api.xmlDocGetRootElement)
#define xmlFreeDoc (dr_lib_api.xmlFreeDoc)
#define xmlFreeParserCtxt (dr_lib_api.xmlFreeParserCtxt)
#define xmlGetProp (dr_lib_api.xmlGetProp)
#define xmlInitParser (dr_lib_api.xmlInitParser)
#define xmlParseChunk (dr_lib_api.xmlParseChunk)
#define xmlReadMemory (dr_lib_api.xmlReadMemory)
#define xmlStopParser (dr_lib_api.xmlStopParser)
#define archive_entry_filetype (dr_lib_api.archive_entry_filetype)
#define archive_entry_pathname (dr_lib_api.archive_entry_pathname)
#define archive_entry_size (dr_lib_api.archive_entry_size)
#define archive_entry_size_is_set (dr_lib_api.archive_entry_size_is_set)
#define archive_error_string (dr_lib_api.archive_error_string)
#define archive_read_data (dr_lib_api.archive_read_data)
#define archive_read_free (dr_lib_api.archive_read_free)
#define archive_read_new (dr_lib_api.archive_read_new)
#define archive_read_next_header (dr_lib_api.archive_read_next_header)
#define archive_read_open_memory (dr_lib_api.archive_read_open_memory)
#define archive_read_support_format_zip (dr_lib_api.archive_read_support_format_zip)
#endif
