/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __PYSIGHT_COMMANDS_H
#define __PYSIGHT_COMMANDS_H

/* One entry point per subcommand, each in its own cmd_NAME.c. */
int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_containers(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);

#endif /* __PYSIGHT_COMMANDS_H */
