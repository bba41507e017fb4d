// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Find a process's interpreter: the executable (Debian links libpython
 * statically and builds non-PIE) or a mapped libpython3.X.so (pyenv,
 * most distributions' embedders).  Files are opened through
 * /proc/PID/map_files, so a process in another mount namespace or a
 * chroot is read from its own root.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "elffile.h"
#include "offsets.h"
#include "process.h"

#define MIN_MINOR 8

struct mapping {
	uint64_t start, end, offset;
	char path[PATH_MAX];
};

__u64 process__kernel_dev(dev_t dev)
{
	return ((__u64)major(dev) << 20) | minor(dev);
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

int process__version_from_name(const char *path, int *major, int *minor)
{
	const char *b = base_name(path), *p;

	p = strstr(b, "python");
	if (!p)
		return -ENOENT;
	p += strlen("python");
	if (sscanf(p, "%d.%d", major, minor) == 2)
		return 0;
	return -ENOENT;
}

static bool is_libpython(const char *path)
{
	return !strncmp(base_name(path), "libpython", 9) &&
	       strstr(base_name(path), ".so");
}

static bool looks_like_python(const char *path)
{
	return !strncmp(base_name(path), "python", 6);
}

/* The first mapping (lowest address) of the executable and of libpython. */
static int read_maps(pid_t pid, const char *exe, struct mapping *exe_map,
		     struct mapping *lib_map)
{
	char path[64], line[PATH_MAX + 128];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		struct mapping m = {};
		char *file;
		int n = 0;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64
			   " %*s %*s %n", &m.start, &m.end, &m.offset, &n) < 3 ||
		    !n)
			continue;
		file = line + n;
		file[strcspn(file, "\n")] = 0;
		if (file[0] != '/')
			continue;
		snprintf(m.path, sizeof(m.path), "%s", file);
		if (!exe_map->start && !strcmp(file, exe))
			*exe_map = m;
		else if (!lib_map->start && is_libpython(file))
			*lib_map = m;
	}
	fclose(f);
	return 0;
}

/* Open the mapped file as the process sees it; path says how it was. */
static int open_mapped(pid_t pid, const struct mapping *m,
		       struct elf_file **ef, char *path, size_t len)
{
	snprintf(path, len, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid,
		 m->start, m->end);
	if (!elffile__open(path, ef))
		return 0;
	snprintf(path, len, "/proc/%d/root%s", pid, m->path);
	return elffile__open(path, ef);
}

/*
 * Where code objects die: PyCode_Type.tp_dealloc.  A uprobe there lets
 * BPF cache code objects safely.  0 when it cannot be found.
 */
static __u64 code_dealloc_offset(struct elf_file *ef, uint64_t code_type)
{
	const uint64_t tp_dealloc = 48;	/* after PyVarObject, tp_name, sizes */
	uint64_t fn = 0, off = 0;

	if (elffile__read_pointer(ef, code_type + tp_dealloc, &fn) || !fn ||
	    elffile__file_offset(ef, fn, &off))
		return 0;
	return off;
}

/* Py_Version (3.11+) is a const in .rodata: its file bytes are the value. */
static int detect_version(struct elf_file *ef, const char *path,
			  struct pyproc_info *info)
{
	uint64_t addr, size, hex = 0;

	if (!elffile__symbol(ef, "Py_Version", &addr, &size) &&
	    !elffile__read(ef, addr, &hex, size == 4 ? 4 : 8) && hex) {
		info->major = (hex >> 24) & 0xff;
		info->minor = (hex >> 16) & 0xff;
		info->micro = (hex >> 8) & 0xff;
		info->proc.off.version_hex = (__u32)hex;
		return 0;
	}
	if (process__version_from_name(path, &info->major, &info->minor))
		return -ENOENT;
	info->proc.off.version_hex = (__u32)(info->major << 24 | info->minor << 16);
	return 0;
}

static int load_offsets(struct elf_file *ef, uint64_t runtime, uint64_t size,
			struct pyproc_info *info, char *err, size_t errlen)
{
	__u32 hex = info->proc.off.version_hex;
	static char buf[16384];
	size_t len;
	int ret;

	if (info->minor <= 12) {
		ret = offsets__from_table(info->major, info->minor,
					  &info->proc.off);
		if (ret)
			snprintf(err, errlen, "Python %d.%d has no offset table",
				 info->major, info->minor);
		else
			info->proc.off.version_hex = hex;
		return ret ? -ENOTSUP : 0;
	}
	len = size && size < sizeof(buf) ? size : sizeof(buf);
	while (len >= 512 && elffile__read(ef, runtime, buf, len))
		len /= 2;
	if (len < 512) {
		snprintf(err, errlen,
			 "Python %d.%d: cannot read _Py_DebugOffsets from %s",
			 info->major, info->minor, info->interp_path);
		return -ENOTSUP;
	}
	ret = offsets__from_debug(buf, len, info->minor, &info->proc.off, err,
				  errlen);
	return ret ? -ENOTSUP : 0;
}

/*
 * What one interpreter file says, before relocation.  Kept per file
 * (inode, size, mtime), so a host starting many processes parses each
 * binary's symbol tables once, not once a process.
 */
struct interp_facts {
	struct stat id;
	int ret;		/* 0, -ENOENT (no _PyRuntime) or -ENOTSUP */
	char err[PATH_MAX + 128];
	struct pyproc_info info;	/* addresses unrelocated */
	bool is_exec;
	uint64_t first_load;
};

#define FACTS_CACHE 64

static struct interp_facts facts_cache[FACTS_CACHE];
static unsigned int facts_next;

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	       a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static void read_facts(struct elf_file *ef, const struct mapping *m,
		       struct interp_facts *f)
{
	static char why[PATH_MAX + 128];
	struct pyproc_info *info = &f->info;
	uint64_t runtime, rsize, code_type, addr;

	f->is_exec = elffile__is_exec(ef);
	f->first_load = elffile__first_load(ef);
	if (elffile__symbol(ef, "_PyRuntime", &runtime, &rsize)) {
		f->ret = -ENOENT;
		return;
	}
	snprintf(info->interp_path, sizeof(info->interp_path), "%s", m->path);
	f->ret = -ENOTSUP;
	if (detect_version(ef, m->path, info)) {
		snprintf(f->err, sizeof(f->err),
			 "cannot tell the Python version of %s", m->path);
		return;
	}
	if (info->major != 3 || info->minor < MIN_MINOR) {
		snprintf(f->err, sizeof(f->err),
			 "Python %d.%d is not supported (3.%d or newer is)",
			 info->major, info->minor, MIN_MINOR);
		return;
	}
	if (load_offsets(ef, runtime, rsize, info, why, sizeof(why))) {
		snprintf(f->err, sizeof(f->err), "%s", why);
		return;
	}
	if (elffile__symbol(ef, "PyCode_Type", &code_type, NULL)) {
		snprintf(f->err, sizeof(f->err), "no PyCode_Type symbol in %s",
			 m->path);
		return;
	}
	info->proc.runtime_addr = runtime;
	info->proc.code_type_addr = code_type;
	if (!elffile__symbol(ef, "PyUnicode_Type", &addr, NULL))
		info->proc.unicode_type_addr = addr;
	if (!elffile__symbol(ef, "PyBytes_Type", &addr, NULL))
		info->proc.bytes_type_addr = addr;
	info->proc.state = PY_PROC_PYTHON;
	info->code_free_offset = code_dealloc_offset(ef, code_type);
	f->ret = 0;
}

static const struct interp_facts *facts_of(pid_t pid, const struct mapping *m,
					   char *open_path, size_t len)
{
	struct interp_facts *f;
	struct elf_file *ef;
	struct stat st;
	unsigned int i;

	if (open_mapped(pid, m, &ef, open_path, len))
		return NULL;
	if (stat(open_path, &st)) {
		elffile__close(ef);
		return NULL;
	}
	for (i = 0; i < FACTS_CACHE; i++) {
		if (facts_cache[i].id.st_ino && same_file(&facts_cache[i].id, &st)) {
			elffile__close(ef);
			return &facts_cache[i];
		}
	}
	f = &facts_cache[facts_next++ % FACTS_CACHE];
	memset(f, 0, sizeof(*f));
	f->id = st;
	read_facts(ef, m, f);
	elffile__close(ef);
	return f;
}

static int inspect_file(pid_t pid, const struct mapping *m, bool is_exe,
			struct pyproc_info *info, char *err, size_t errlen)
{
	char open_path[sizeof(info->interp_open)];
	const struct interp_facts *f;
	uint64_t bias = 0;

	f = facts_of(pid, m, open_path, sizeof(open_path));
	if (!f || f->ret == -ENOENT)
		return -ENOENT;
	if (f->ret) {
		snprintf(err, errlen, "%s", f->err);
		return f->ret;
	}
	/* keep what the caller already learnt about the executable */
	info->proc = f->info.proc;
	info->major = f->info.major;
	info->minor = f->info.minor;
	info->micro = f->info.micro;
	info->code_free_offset = f->info.code_free_offset;
	snprintf(info->interp_path, sizeof(info->interp_path), "%s", m->path);
	snprintf(info->interp_open, sizeof(info->interp_open), "%s", open_path);
	info->interp_key.dev = process__kernel_dev(f->id.st_dev);
	info->interp_key.ino = f->id.st_ino;
	if (!f->is_exec)
		bias = m->start - m->offset - f->first_load;
	info->proc.runtime_addr += bias;
	info->proc.code_type_addr += bias;
	if (info->proc.unicode_type_addr)
		info->proc.unicode_type_addr += bias;
	if (info->proc.bytes_type_addr)
		info->proc.bytes_type_addr += bias;
	info->exe_reusable = is_exe && f->is_exec;
	return 0;
}

/* An interpreter without _PyRuntime: too old, or stripped. */
static int no_runtime(const char *path, char *err, size_t errlen, int ret)
{
	int major, minor;

	if (!process__version_from_name(path, &major, &minor) &&
	    (major != 3 || minor < MIN_MINOR)) {
		snprintf(err, errlen,
			 "Python %d.%d is not supported (3.%d or newer is)",
			 major, minor, MIN_MINOR);
		return -ENOTSUP;
	}
	snprintf(err, errlen,
		 "stripped or unknown interpreter: no _PyRuntime symbol in %s",
		 path);
	return ret;
}

static int exe_identity(pid_t pid, char *exe, size_t len,
			struct pyproc_info *info)
{
	char path[64];
	struct stat st;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, exe, len - 1);
	if (n < 0)
		return -errno;
	exe[n] = 0;
	/* a replaced binary reads "path (deleted)" */
	if (n > 10 && !strcmp(exe + n - 10, " (deleted)"))
		exe[n - 10] = 0;
	if (stat(path, &st))
		return -errno;
	info->exe_key.dev = process__kernel_dev(st.st_dev);
	info->exe_key.ino = st.st_ino;
	return 0;
}

int process__inspect(pid_t pid, struct pyproc_info *info, char *err,
		     size_t errlen)
{
	struct mapping exe_map = {}, lib_map = {};
	char exe[PATH_MAX], path[64];
	int ret;

	memset(info, 0, sizeof(*info));
	snprintf(path, sizeof(path), "/proc/%d", pid);
	if (access(path, F_OK)) {
		snprintf(err, errlen, "no such process: %d", pid);
		return -ESRCH;
	}
	ret = exe_identity(pid, exe, sizeof(exe), info);
	if (ret == -ENOENT) {	/* kernel thread, or a zombie */
		snprintf(err, errlen, "%d is not a Python process", pid);
		return -ENOEXEC;
	}
	if (ret) {
		snprintf(err, errlen, "cannot read /proc/%d/exe: %s", pid,
			 strerror(-ret));
		return ret == -ESRCH ? -ESRCH : -EACCES;
	}
	ret = read_maps(pid, exe, &exe_map, &lib_map);
	if (ret) {
		snprintf(err, errlen, "cannot read /proc/%d/maps: %s", pid,
			 strerror(-ret));
		return ret == -ENOENT ? -ESRCH : -EACCES;
	}
	err[0] = 0;
	if (exe_map.start) {
		ret = inspect_file(pid, &exe_map, true, info, err, errlen);
		if (ret != -ENOENT)
			return ret;
	}
	if (lib_map.start) {
		ret = inspect_file(pid, &lib_map, false, info, err, errlen);
		if (ret != -ENOENT)
			return ret;
		return no_runtime(lib_map.path, err, errlen, -ENOTSUP);
	}
	if (looks_like_python(exe)) {
		/* the dynamic loader may not have mapped libpython yet */
		return no_runtime(exe, err, errlen, -EAGAIN);
	}
	snprintf(err, errlen, "%d is not a Python process (%s)", pid, exe);
	return -ENOEXEC;
}
