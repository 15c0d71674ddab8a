#ifndef EDGEINGEST_CZSTD_SHIM_H
#define EDGEINGEST_CZSTD_SHIM_H
#include <zstd.h>
#endif
