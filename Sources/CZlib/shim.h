#ifndef EDGEINGEST_CZLIB_SHIM_H
#define EDGEINGEST_CZLIB_SHIM_H
#include <zlib.h>

/// deflateInit2 is a macro; gzip framing is windowBits 15 + 16.
static inline int edgeingest_deflate_init_gzip(z_stream *s, int level) {
    return deflateInit2(s, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
}
static inline int edgeingest_inflate_init_gzip(z_stream *s) {
    return inflateInit2(s, 15 + 16);
}
#endif
