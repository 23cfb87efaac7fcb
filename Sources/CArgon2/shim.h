#ifndef PORTARIA_CARGON2_SHIM_H
#define PORTARIA_CARGON2_SHIM_H
#include <argon2.h>
#endif
