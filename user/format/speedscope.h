/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What the speedscope writer and reader agree on beyond the schema. */
#ifndef __PYSIGHT_SPEEDSCOPE_H
#define __PYSIGHT_SPEEDSCOPE_H

#define SPEEDSCOPE_SCHEMA	"https://www.speedscope.app/file-format-schema.json"
#define SPEEDSCOPE_EXPORTER	"pysight@" PYSIGHT_VERSION
/* the document's name: SPEEDSCOPE_NAME "TARGET (MODE)" */
#define SPEEDSCOPE_NAME		"pysight: "
/* the target of a host-wide recording */
#define SPEEDSCOPE_ALL		"all Python processes"

#endif /* __PYSIGHT_SPEEDSCOPE_H */
