#ifndef EDGEINGEST_CEPOLL_SHIM_H
#define EDGEINGEST_CEPOLL_SHIM_H
/* epoll is Linux's, not POSIX's: Swift's Glibc module does not export it. */
#include <sys/epoll.h>
#endif
