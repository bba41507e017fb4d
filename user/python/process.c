// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Find a process's interpreter: the executable (Debian links libpython
 * statically and builds non-PIE) or a mapped libpython3.X.so (pyenv,
 * most distributions' embedders).
 *
 * The file is opened once, as exactly the inode the process maps
 * (procmaps__open), and everything after goes through that descriptor:
 * its identity (fstat), its ELF data (pread), and the uprobe that
 * watches it (/proc/self/fd/N).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
#include "procmaps.h"

#define MIN_MINOR	8

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

pid_t process__nspid(const char *line)
{
	const char *last;
	int v;

	if (strncmp(line, "NSpid:", 6))
		return 0;
	last = strrchr(line, '\t');
	v = last ? atoi(last + 1) : 0;
	return v > 0 ? v : 0;
}

struct first_maps {
	const char *exe;
	struct mapping *exe_map, *lib_map;
};

static int first_map(void *ctx, const struct mapping *m)
{
	struct first_maps *fm = ctx;

	if (!fm->exe_map->start && !strcmp(m->path, fm->exe))
		*fm->exe_map = *m;
	else if (!fm->lib_map->start && is_libpython(m->path))
		*fm->lib_map = *m;
	return 0;
}

/* The first mapping (lowest address) of the executable and of libpython. */
static int read_maps(pid_t pid, const char *exe, struct mapping *exe_map,
		     struct mapping *lib_map)
{
	struct first_maps fm = { exe, exe_map, lib_map };

	return procmaps__each(pid, first_map, &fm);
}

/*
 * Where code objects die: PyCode_Type.tp_dealloc.  A uprobe there lets
 * BPF cache code objects safely.  0 when it cannot be found, or when the
 * file says it is not code: the offset comes from the file's own bytes.
 */
static __u64 code_dealloc_offset(struct elf_file *ef, uint64_t code_type)
{
	const uint64_t tp_dealloc = 48;	/* after PyVarObject, tp_name, sizes */
	uint64_t fn = 0, off = 0;

	if (elffile__read_pointer(ef, code_type + tp_dealloc, &fn) || !fn ||
	    elffile__code_offset(ef, fn, &off))
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
	size_t len;
	char *buf;
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
	buf = malloc(OFFSETS_DEBUG_MAX);
	if (!buf)
		return -ENOMEM;
	len = size && size < OFFSETS_DEBUG_MAX ? size : OFFSETS_DEBUG_MAX;
	while (len >= 512 && elffile__read(ef, runtime, buf, len))
		len /= 2;
	if (len < 512) {
		snprintf(err, errlen,
			 "Python %d.%d: cannot read _Py_DebugOffsets from %s",
			 info->major, info->minor, info->interp_path);
		ret = -ENOTSUP;
	} else {
		ret = offsets__from_debug(buf, len, info->minor,
					  &info->proc.off, err, errlen);
		ret = ret ? -ENOTSUP : 0;
	}
	free(buf);
	return ret;
}

/*
 * What one interpreter file says, before relocation.  Kept per file
 * (inode, size, mtime), so a host starting many processes parses each
 * binary's symbol tables once, not once a process.
 */
struct interp_facts {
	struct py_binary_key id;
	int ret;		/* 0, -ENOENT (no _PyRuntime) or -ENOTSUP */
	char err[PATH_MAX + 128];
	struct pyproc_info info;	/* addresses unrelocated */
	bool is_exec;
	uint64_t first_load;
};

#define FACTS_CACHE 64

struct interp_cache {
	struct interp_facts facts[FACTS_CACHE];
	unsigned int next;
};

struct interp_cache *interp_cache__new(void)
{
	return calloc(1, sizeof(struct interp_cache));
}

void interp_cache__free(struct interp_cache *c)
{
	free(c);
}

static void read_facts(struct elf_file *ef, const struct mapping *m,
		       struct interp_facts *f)
{
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
	if (load_offsets(ef, runtime, rsize, info, f->err, sizeof(f->err)))
		return;
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

/* The facts of the file open at fd, from the cache or parsed now. */
static const struct interp_facts *facts_of(struct interp_cache *c, int fd,
					   const struct py_binary_key *id,
					   const struct mapping *m,
					   struct interp_facts *scratch)
{
	struct interp_facts *f = scratch;
	struct elf_file *ef;
	unsigned int i;

	for (i = 0; c && i < FACTS_CACHE; i++)
		if (c->facts[i].id.ino &&
		    !memcmp(&c->facts[i].id, id, sizeof(*id)))
			return &c->facts[i];
	if (c)
		f = &c->facts[c->next++ % FACTS_CACHE];
	memset(f, 0, sizeof(*f));
	f->id = *id;
	if (elffile__open_fd(fd, &ef)) {
		f->ret = -ENOENT;	/* not ELF: not an interpreter */
		return f;
	}
	read_facts(ef, m, f);
	elffile__close(ef);
	return f;
}

int process__facts_of_fd(int fd, const char *path, struct pyproc_info *info,
			 char *err, size_t errlen)
{
	struct interp_facts f;
	struct mapping m = {};

	snprintf(m.path, sizeof(m.path), "%s", path);
	facts_of(NULL, fd, &(struct py_binary_key){ 0 }, &m, &f);
	*info = f.info;
	snprintf(err, errlen, "%s", f.err);
	return f.ret;
}

int process__exec_facts(struct interp_cache *c, const char *path,
			struct pyproc_info *info)
{
	struct interp_facts *scratch = NULL;
	const struct interp_facts *f;
	struct mapping m = {};
	struct py_binary_key id;
	struct stat st;
	int fd, ret;

	memset(info, 0, sizeof(*info));
	info->interp_fd = -1;
	/* not blocking on a FIFO named like a command */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -ENOEXEC;
	}
	if (!c && !(scratch = malloc(sizeof(*scratch)))) {
		close(fd);
		return -ENOMEM;
	}
	snprintf(m.path, sizeof(m.path), "%s", path);
	procmaps__file_key(&st, &id);
	f = facts_of(c, fd, &id, &m, scratch);
	ret = f->ret ? f->ret : f->is_exec ? 0 : -ENOTSUP;
	if (ret) {
		close(fd);
		goto out;
	}
	*info = f->info;
	snprintf(info->interp_path, sizeof(info->interp_path), "%s", path);
	info->interp_fd = fd;
	info->interp_key = id;
	info->exe_key = id;
	info->exe_known = true;
	info->exe_reusable = true;
out:
	free(scratch);
	return ret;
}

static int inspect_file(struct interp_cache *c, pid_t pid,
			const struct mapping *m, bool is_exe,
			struct pyproc_info *info, char *err, size_t errlen)
{
	const struct interp_facts *f;
	struct interp_facts *scratch = NULL;
	struct py_binary_key id;
	uint64_t bias = 0;
	struct stat st;
	int fd, ret = 0;

	fd = procmaps__open(pid, m, is_exe, &st);
	if (fd == -ESTALE) {
		/* replaced since it was mapped: look again later */
		snprintf(err, errlen, "%s is not the file pid %d maps", m->path,
			 pid);
		return -EAGAIN;
	}
	if (fd < 0)
		return -ENOENT;
	procmaps__file_key(&st, &id);
	if (!c && !(scratch = malloc(sizeof(*scratch)))) {
		close(fd);
		return -ENOMEM;
	}
	f = facts_of(c, fd, &id, m, scratch);
	if (f->ret) {
		snprintf(err, errlen, "%s", f->err);
		ret = f->ret;
		close(fd);
		goto out;
	}
	/* keep what the caller already learnt about the executable */
	info->proc = f->info.proc;
	info->major = f->info.major;
	info->minor = f->info.minor;
	info->micro = f->info.micro;
	info->code_free_offset = f->info.code_free_offset;
	snprintf(info->interp_path, sizeof(info->interp_path), "%s", m->path);
	info->interp_fd = fd;
	info->interp_key = id;
	if (!f->is_exec)
		bias = m->start - m->offset - f->first_load;
	info->proc.runtime_addr += bias;
	info->proc.code_type_addr += bias;
	if (info->proc.unicode_type_addr)
		info->proc.unicode_type_addr += bias;
	if (info->proc.bytes_type_addr)
		info->proc.bytes_type_addr += bias;
	info->exe_reusable = is_exe && f->is_exec;
out:
	free(scratch);
	return ret;
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

/* The executable's path as the process sees it, and its identity, which
 * the BPF side computes at exec from the same inode. */
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
	procmaps__cut_deleted(exe);
	if (stat(path, &st))
		return -errno;
	procmaps__file_key(&st, &info->exe_key);
	info->exe_known = true;
	return 0;
}

void process__release(struct pyproc_info *info)
{
	if (info->interp_fd >= 0)
		close(info->interp_fd);
	info->interp_fd = -1;
}

static int inspect_maps(struct interp_cache *c, pid_t pid, const char *exe,
			struct pyproc_info *info, char *err, size_t errlen)
{
	struct mapping exe_map = {}, lib_map = {};
	int ret;

	ret = read_maps(pid, exe, &exe_map, &lib_map);
	if (ret) {
		snprintf(err, errlen, "cannot read /proc/%d/maps: %s", pid,
			 strerror(-ret));
		return ret == -ENOENT ? -ESRCH : -EACCES;
	}
	err[0] = 0;
	if (exe_map.start) {
		ret = inspect_file(c, pid, &exe_map, true, info, err, errlen);
		if (ret != -ENOENT)
			return ret;
	}
	if (lib_map.start) {
		ret = inspect_file(c, pid, &lib_map, false, info, err, errlen);
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

int process__inspect(struct interp_cache *c, pid_t pid,
		     struct pyproc_info *info, char *err, size_t errlen)
{
	char exe[PATH_MAX], path[64];
	int ret;

	memset(info, 0, sizeof(*info));
	info->interp_fd = -1;
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
	ret = inspect_maps(c, pid, exe, info, err, errlen);
	if (ret)
		process__release(info);
	return ret;
}

int process__each(int (*fn)(pid_t pid, void *ctx), void *ctx)
{
	DIR *dir = opendir("/proc");
	pid_t self = getpid();
	struct dirent *d;
	int ret = 0;
	char *end;
	long pid;

	if (!dir)
		return -errno;
	while (!ret && (d = readdir(dir))) {
		pid = strtol(d->d_name, &end, 10);
		if (*end || pid <= 0 || pid > INT32_MAX || pid == self)
			continue;
		ret = fn((pid_t)pid, ctx);
	}
	closedir(dir);
	return ret;
}
