// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Loads empty_hooks.bpf.o, attaches its programs, prints "ready PID" and
 * holds them until a line (or the end) on stdin.  Nothing is pinned: the
 * programs go when this process does.
 *
 *   empty_hooks OBJ [PROG...]
 *
 * With PROG names, only those are attached: which hook costs what.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>

static int chosen(const struct bpf_program *prog, int argc, char **argv)
{
	int i;

	if (argc == 2)
		return 1;
	for (i = 2; i < argc; i++)
		if (!strcmp(bpf_program__name(prog), argv[i]))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	struct bpf_link *links[8] = {};
	struct bpf_program *prog;
	struct bpf_object *obj;
	char line[16];
	int n = 0, err = 1;

	if (argc < 2) {
		fprintf(stderr, "usage: empty_hooks OBJ [PROG...]\n");
		return 2;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		perror("failed to open object");
		return 1;
	}
	if (bpf_object__load(obj)) {
		perror("failed to load object");
		goto cleanup;
	}
	bpf_object__for_each_program(prog, obj) {
		if (n == 8)
			break;
		if (!chosen(prog, argc, argv))
			continue;
		links[n] = bpf_program__attach(prog);
		if (!links[n]) {
			perror("failed to attach program");
			goto cleanup;
		}
		n++;
	}
	printf("ready %d\n", getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		line[0] = 0;
	err = 0;
cleanup:
	while (n > 0)
		bpf_link__destroy(links[--n]);
	bpf_object__close(obj);
	return err != 0;
}
