/* SPDX-License-Identifier: GPL-2.0 */
/* The harnesses' inputs' little-endian fields. */
#ifndef PYSIGHT_FUZZ_LE_H
#define PYSIGHT_FUZZ_LE_H

#include <stdint.h>

static inline uint32_t fuzz_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t fuzz_le64(const uint8_t *p)
{
	return fuzz_le32(p) | (uint64_t)fuzz_le32(p + 4) << 32;
}

#endif
