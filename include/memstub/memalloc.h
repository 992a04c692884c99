/* memstub/memalloc.h: the former name of memstub/stub.h (struct memAlloc,
 * struct memstub_stub, the timing modes), kept so that code including it
 * still builds. New code includes memstub/stub.h. */
#ifndef MEMSTUB_MEMALLOC_H
#define MEMSTUB_MEMALLOC_H

#include "memstub/stub.h"

#endif
