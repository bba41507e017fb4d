/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What the pprof writer and reader agree on beyond profile.proto. */
#ifndef __PYSIGHT_PPROF_H
#define __PYSIGHT_PPROF_H

#include "profile.pb-c.h"	/* generated from Debian's profile.proto */

/* Profile.comment lines: who wrote it, the mode, the target */
#define PPROF_EXPORTER		"pysight@" PYSIGHT_VERSION
#define PPROF_MODE		"mode="
#define PPROF_TARGET		"target="

#endif /* __PYSIGHT_PPROF_H */
