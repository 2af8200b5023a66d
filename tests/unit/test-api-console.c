/* test-api-console.c: the console's header readers: which Accept-Encoding values allow gzip, which
 * If-None-Match values name an entity tag. */
#include <stdio.h>

#include "api-console.h"
#include "test.h"

int main(void) {
        CHECK(console_accepts_gzip("gzip"));
        CHECK(console_accepts_gzip("gzip, deflate, br, zstd"));
        CHECK(console_accepts_gzip("br;q=1.0, GZip;q=0.5"));
        CHECK(console_accepts_gzip("x-gzip"));
        CHECK(console_accepts_gzip("*"));
        CHECK(console_accepts_gzip("identity, *;q=0.1"));
        CHECK(console_accepts_gzip("gzip;q=0.001"));
        CHECK(!console_accepts_gzip(NULL));
        CHECK(!console_accepts_gzip(""));
        CHECK(!console_accepts_gzip("identity"));
        CHECK(!console_accepts_gzip("deflate, br"));
        CHECK(!console_accepts_gzip("gzip;q=0"));
        CHECK(!console_accepts_gzip("gzip; q=0.000, br"));
        CHECK(!console_accepts_gzip("*;q=0"));
        CHECK(!console_accepts_gzip("gzip;q=0, *"));    /* named and refused: the star does not bring it back */
        CHECK(!console_accepts_gzip("gzipped, xgzip")); /* whole names only */
        CHECK(console_accepts_gzip(" , ,gzip ,"));

        CHECK(console_etag_matches("\"abc\"", "\"abc\""));
        CHECK(console_etag_matches("W/\"abc\"", "\"abc\""));
        CHECK(console_etag_matches("\"x\", \"abc\"", "\"abc\""));
        CHECK(console_etag_matches("*", "\"abc\""));
        CHECK(!console_etag_matches("\"abcd\"", "\"abc\""));
        CHECK(!console_etag_matches("\"ab\"", "\"abc\""));
        CHECK(!console_etag_matches("abc", "\"abc\""));
        CHECK(!console_etag_matches(NULL, "\"abc\""));
        CHECK(!console_etag_matches("", "\"abc\""));
        CHECK(!console_etag_matches("\"abc-gz\"", "\"abc\""));
        return test_done();
}
