#ifndef PORTARIA_CLIBPQ_SHIM_H
#define PORTARIA_CLIBPQ_SHIM_H
#if __has_include(<libpq-fe.h>)
#include <libpq-fe.h>
#else
#include <postgresql/libpq-fe.h>
#endif
#endif
