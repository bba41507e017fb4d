// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Container ids and pod uids from the cgroup paths the runtimes write. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "container.h"

#define ID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define UID "6a1e5b4f-3c2d-4e8f-9a0b-1c2d3e4f5a6b"
#define UID_ "6a1e5b4f_3c2d_4e8f_9a0b_1c2d3e4f5a6b"
/* 64 characters: the longest name kept */
#define NAME64 "n123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

#define CT(path, id, pod, runtime)	{ path, id, pod, runtime, false }
#define NAMED(path, name, runtime)	{ path, name, "", runtime, true }
#define NONE(path)			{ path, NULL, NULL, NULL, false }

static const struct {
	const char *path, *id, *pod, *runtime;
	bool named;
} cases[] = {
	/* Docker, systemd and cgroupfs drivers */
	CT("/system.slice/docker-" ID ".scope", ID, "", "docker"),
	CT("/docker/" ID, ID, "", "docker"),
	CT("/sys/fs/cgroup/unified/docker/" ID, ID, "", "docker"),
	/* containerd and CRI-O under kubepods, systemd driver */
	CT("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
	   ".slice/cri-containerd-" ID ".scope", ID, UID, "containerd"),
	CT("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
	   ".slice/crio-" ID ".scope", ID, UID, "cri-o"),
	CT("/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID ".scope",
	   ID, UID, "containerd"),	/* guaranteed QoS */
	/* cgroupfs driver */
	CT("/kubepods/burstable/pod" UID "/" ID, ID, UID, "kubernetes"),
	CT("/kubepods/pod" UID "/" ID, ID, UID, "kubernetes"),
	CT("/kubepods/besteffort/pod" UID "/crio-" ID, ID, UID, "cri-o"),
	/* containerd's own layout, /<namespace>/<id>: CRI's and ctr's */
	CT("/k8s.io/" ID, ID, "", "containerd"),
	CT("/default/" ID, ID, "", "containerd"),
	/* Podman, systemd and cgroupfs managers */
	CT("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID
	   ".scope", ID, "", "podman"),
	CT("/machine.slice/libpod-" ID ".scope/container", ID, "", "podman"),
	CT("/libpod_parent/libpod-" ID, ID, "", "podman"),
	CT("/libpod_parent/" ID "/libpod-" ID, ID, "", "podman"),	/* in a pod */
	/* LXC 4 and later, 3.1 to 3.2, 3.0 and Proxmox; Incus's projects */
	NAMED("/lxc.payload.web01", "web01", "lxc"),
	NAMED("/lxc.payload.web01/system.slice/ssh.service", "web01", "lxc"),
	NAMED("/lxc.payload/web01/init.scope", "web01", "lxc"),
	NAMED("/lxc/100/ns/init.scope", "100", "lxc"),
	NAMED("/lxc.payload.proj_web-01.b", "proj_web-01.b", "lxc"),
	NAMED("/lxc.payload." NAME64, NAME64, "lxc"),
	/* systemd-nspawn, its name escaped as a unit's */
	NAMED("/machine.slice/machine-box.scope", "box", "systemd-nspawn"),
	NAMED("/machine.slice/machine-my\\x2dbox.scope/payload", "my-box",
	      "systemd-nspawn"),
	/* the innermost container: Docker in LXC */
	CT("/lxc.payload.web01/system.slice/docker-" ID ".scope", ID, "", "docker"),
	/* not containers */
	NONE("/"),
	NONE("/user.slice/user-1000.slice/session-3.scope"),
	NONE("/system.slice/ssh.service"),
	NONE("/machine.slice/libpod-conmon-" ID ".scope"),
	NONE("/libpod_parent/conmon"),
	NONE("/libpod_parent/libpod-conmon-" ID),
	NONE("/libpod_parent/" ID),	/* a pod, not a container */
	NONE("/libpod_parent/libpod-" ID "0"),
	NONE("/libpod_parent/libpod-0123"),
	NONE("/kubepods/besteffort/pod" UID "/crio-conmon-" ID),
	NONE("/kubepods/besteffort/pod" UID),
	NONE("/docker-" ID "x.scope"),
	NONE("/docker-" ID),
	NONE("/docker-0123.scope"),
	NONE("/somewhere/" ID),
	NONE("/k8s.io/0123456789ab"),
	NONE("/k8s.io"),
	NONE("/k8s.io/" ID "0"),
	NONE("/default/web01"),
	NONE("/docker/0123456789ABCDEF0123456789abcdef"
	     "0123456789abcdef0123456789abcdef"),
	NONE("/lxc.monitor.web01"),
	NONE("/lxc.monitor/web01"),
	NONE("/lxc.pivot"),
	NONE("/lxc.payload."),
	NONE("/lxc.payload"),
	NONE("/lxc"),
	NONE("/lxc.payload.a b"),
	NONE("/lxc.payload.a;b"),
	NONE("/lxc.payload.a\\x2db"),	/* LXC does not escape */
	NONE("/lxc.payload.x" NAME64),	/* 65 characters */
	NONE("/lxc/.."),
	NONE("/lxc/."),
	NONE("/machine.slice/machine-qemu\\x2d1\\x2dvm.scope"),	/* a VM */
	NONE("/machine.slice/machine-.scope"),
	NONE("/machine.slice/machine-box.slice"),
	NONE("/machine.slice/machine-box"),
	NONE("/machine.slice/machine-a\\x2fb.scope"),
	NONE("/machine.slice/machine-a\\x20b.scope"),
	NONE("/machine.slice/machine-a\\x2.scope"),
	NONE("/machine.slice/machine-a\\x00b.scope"),
	NONE("/machine.slice/machine-a\\.scope"),
	NONE(""),
};

static void test_table(void)
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
		CHECK(c.named == cases[i].named, "%s: named %d", cases[i].path,
		      c.named);
	}
}

/* What labels and listings show: an id's first 12 digits, a name whole. */
static void test_shown(void)
{
	CHECK(container__shown(ID) == CONTAINER_SHORT_LEN, "id");
	CHECK(container__shown("web01") == 5, "name");
	CHECK(container__shown(NAME64) == 64, "a 64-character name");
	CHECK(container__shown("") == 0, "empty");
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

/* Whatever the parser accepts is safe to print, to label a stack with,
 * and to read back: 64 hex digits, or a name of the characters a label
 * may hold; a pod's uid or nothing. */
static void check_safe(const char *path, const struct container_id *c)
{
	size_t n = strnlen(c->id, sizeof(c->id)), i;
	bool ok = n > 0 && n < sizeof(c->id) && c->runtime;

	for (i = 0; ok && i < n; i++)
		ok = name_char(c->id[i]);
	if (ok && !c->named)
		ok = container__is_id(c->id, n);
	if (ok && c->named)
		ok = strcmp(c->id, ".") && strcmp(c->id, "..");
	n = strnlen(c->pod, sizeof(c->pod));
	ok = ok && (n == 0 || n == POD_UID_LEN);
	CHECK(ok, "%s: accepted as '%.*s'", path, (int)sizeof(c->id), c->id);
}

/* Paths built from the pieces the parser looks for, in random orders
 * and lengths: what it accepts must pass check_safe. */
static void test_random_paths(void)
{
	static const char *const pieces[] = {
		"/", "/", "/", "lxc", "lxc.payload", "lxc.payload.", "lxc.monitor.",
		"machine-", ".scope", "\\x2d", "\\x", "\\x2f", "\\x00", "\\xff",
		"2d", "libpod-", "libpod_parent", "crio-", "docker", "docker-",
		"k8s.io", "default", "kubepods", "pod", UID, UID_, ID, "0123",
		"abcdef", "a", "-", ".", "..", " ", ";", "\n", "\xc3\xa9",
		NAME64,
	};
	size_t npieces = sizeof(pieces) / sizeof(pieces[0]);
	struct container_id c;
	char path[1024];
	unsigned int seed = 1, round;
	int accepted = 0;

	for (round = 0; round < 200000; round++) {
		size_t len = 0, n = (size_t)(rand_r(&seed) % 12) + 1;

		path[0] = 0;
		while (n--) {
			const char *p = pieces[rand_r(&seed) % npieces];
			size_t l = strlen(p);

			if (len + l >= sizeof(path))
				break;
			memcpy(path + len, p, l + 1);
			len += l;
		}
		if (!container__parse(path, &c))
			continue;
		accepted++;
		check_safe(path, &c);
	}
	CHECK(accepted > 1000, "only %d random paths accepted", accepted);
}

int main(void)
{
	test_table();
	test_shown();
	test_random_paths();
	return check_summary();
}
