/* memstub/memstub.h: everything public, for programs that use all of memstub. */
#ifndef MEMSTUB_MEMSTUB_H
#define MEMSTUB_MEMSTUB_H

#include "memstub/error.h"
#include "memstub/memalloc.h"
#include "memstub/trace.h"
#include "memstub/gen.h"

#define MEMSTUB_VERSION_STRING "0.1.0"

#endif
