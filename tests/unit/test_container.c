// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Container ids and pod uids from the cgroup paths the runtimes write. */
#include <string.h>

#include "check.h"
#include "container.h"

#define ID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define UID "6a1e5b4f-3c2d-4e8f-9a0b-1c2d3e4f5a6b"
#define UID_ "6a1e5b4f_3c2d_4e8f_9a0b_1c2d3e4f5a6b"

static const struct {
	const char *path, *id, *pod, *runtime;
} cases[] = {
	/* Docker, systemd and cgroupfs drivers */
	{ "/system.slice/docker-" ID ".scope", ID, "", "docker" },
	{ "/docker/" ID, ID, "", "docker" },
	{ "/sys/fs/cgroup/unified/docker/" ID, ID, "", "docker" },
	/* containerd and CRI-O under kubepods, systemd driver */
	{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
	  ".slice/cri-containerd-" ID ".scope", ID, UID, "containerd" },
	{ "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
	  ".slice/crio-" ID ".scope", ID, UID, "cri-o" },
	{ "/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID ".scope",
	  ID, UID, "containerd" },	/* guaranteed QoS */
	/* cgroupfs driver */
	{ "/kubepods/burstable/pod" UID "/" ID, ID, UID, "kubernetes" },
	{ "/kubepods/pod" UID "/" ID, ID, UID, "kubernetes" },
	/* Podman */
	{ "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID
	  ".scope", ID, "", "podman" },
	{ "/machine.slice/libpod-" ID ".scope/container", ID, "", "podman" },
	/* not containers */
	{ "/", NULL, NULL, NULL },
	{ "/user.slice/user-1000.slice/session-3.scope", NULL, NULL, NULL },
	{ "/system.slice/ssh.service", NULL, NULL, NULL },
	{ "/machine.slice/libpod-conmon-" ID ".scope", NULL, NULL, NULL },
	{ "/docker-" ID "x.scope", NULL, NULL, NULL },
	{ "/docker-0123.scope", NULL, NULL, NULL },
	{ "/somewhere/" ID, NULL, NULL, NULL },
	{ "/docker/0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
	  NULL, NULL, NULL },
	{ "", NULL, NULL, NULL },
};

int main(void)
{
	struct container_id c;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool got = container__parse(cases[i].path, &c);

		CHECK(got == (cases[i].id != NULL), "%s: %s", cases[i].path,
		      got ? c.id : "none");
		if (!got || !cases[i].id)
			continue;
		CHECK(!strcmp(c.id, cases[i].id), "%s: id %s", cases[i].path, c.id);
		CHECK(!strcmp(c.pod, cases[i].pod), "%s: pod '%s'", cases[i].path,
		      c.pod);
		CHECK(!strcmp(c.runtime, cases[i].runtime), "%s: runtime %s",
		      cases[i].path, c.runtime);
	}
	return check_summary();
}
