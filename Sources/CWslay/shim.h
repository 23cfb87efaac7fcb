#ifndef PORTARIA_CWSLAY_SHIM_H
#define PORTARIA_CWSLAY_SHIM_H
#include <sys/types.h>
#include <stdint.h>
#include <wslay/wslay.h>
#endif
