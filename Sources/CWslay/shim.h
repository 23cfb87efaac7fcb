#ifndef PORTARIA_CWSLAY_SHIM_H
#define PORTARIA_CWSLAY_SHIM_H
#include <sys/types.h>
#include <stdint.h>
#include <wslay/wslay.h>
#ifdef __linux__
/* The WebSocket event loop's system calls: Swift's Glibc module does not export them. */
#include <sys/epoll.h>
#include <sys/eventfd.h>
#endif
#endif
