/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Emptying a uthash table whose items are each one malloc'd block. */
#ifndef __PYSIGHT_HASHFREE_H
#define __PYSIGHT_HASHFREE_H

#include <stdlib.h>
#include <uthash.h>

/* Delete every item of head (linked by a handle named hh) and free it;
 * head is NULL after. */
#define HASH_FREE_ALL(head)                                     \
	do {                                                    \
		__typeof__(head) _hf_e, _hf_tmp;                \
		HASH_ITER(hh, head, _hf_e, _hf_tmp) {           \
			HASH_DEL(head, _hf_e);                  \
			free(_hf_e);                            \
		}                                               \
	} while (0)

#endif /* __PYSIGHT_HASHFREE_H */
