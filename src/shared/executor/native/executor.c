/*
 * belay-exec: Belay's executor. One of these runs per session inside an environment (the host,
 * the bubblewrap sandbox, a container, a remote host's container) and runs every command Belay
 * sends over one channel: its own stdin (frames in) and stdout (frames out). It needs nothing
 * from the image it runs in: it is linked statically and reads no configuration.
 *
 * Wire format (the same in both directions; wire.ts is the other end and says the same):
 *
 *   u32 length   big-endian: the bytes that follow (1 + 4 + payload), at most 5 + 4 MiB
 *   u8  type     see the FRAME_* constants below
 *   u32 id       big-endian: the command, stream or listener the frame is about (0: none)
 *   ...payload   length - 5 bytes
 *
 * Ids: Belay picks the ids of commands, connections, listeners and kill-all requests (1 ..
 * 2^31-1, never reused); the executor picks the ids of accepted connections (2^31 and up).
 *
 * Flow control: whoever sends data (command output, stdin, stream data) may have at most the
 * receiver's window in flight: WINDOW_INITIAL bytes per command's output (stdout and stderr
 * together), per command's stdin and per stream direction, given back with WINDOW frames
 * (payload: u32 bytes) as the receiver consumes. The executor also stops reading output while its
 * outgoing buffer is over OUT_HIGH_WATER, so neither side holds more than a bound however much a
 * command writes or Belay sends.
 *
 * Commands beyond what its fd limit allows at once (at most 1024, fewer with --max-running=N)
 * wait their turn in order, their stdin kept for them within its window.
 *
 * Per command a shepherd (a fork of the executor, a child subreaper with its own timer) starts
 * the program in a new process group with exactly the given argv, env, cwd, stdin and
 * RLIMIT_FSIZE, and when the program exits, is killed or times out, kills every process left
 * below it (the group, then every child of its own found in /proc, until none is left: setsid
 * and double forks reparent to it). The exit report goes out once the shepherd is gone and the
 * output pipes reached end of file. The channel's fds are close-on-exec and closed in every
 * shepherd; the executor and shepherds are not dumpable (their /proc/<pid>/fd is closed to
 * commands). End of the channel kills everything and ends the executor.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROTOCOL_VERSION 1

/* Belay -> executor */
#define FRAME_SPAWN 1      /* payload: see parse_spawn */
#define FRAME_STDIN 2      /* payload: bytes for the command's stdin */
#define FRAME_STDIN_EOF 3  /* close the command's stdin once written */
#define FRAME_KILL 4       /* kill the command's whole tree */
#define FRAME_CONNECT 5    /* payload: u16 port; id: the new stream */
#define FRAME_LISTEN 6     /* payload: u16 port (0: any); id: the new listener */
#define FRAME_UNLISTEN 7   /* stop listening (accepted streams stay) */
#define FRAME_KILL_ALL 8   /* id: the request, answered by KILL_ALL_DONE */
/* both directions */
#define FRAME_DATA 16      /* stream bytes */
#define FRAME_EOF 17       /* the sender's direction of the stream is done */
#define FRAME_CLOSE 18     /* the stream is gone (payload: why, may be empty) */
#define FRAME_WINDOW 19    /* payload: u32 bytes the receiver consumed */
/* executor -> Belay */
#define FRAME_READY 32     /* payload: u32 protocol version, u32 executor pid */
#define FRAME_SPAWNED 33   /* payload: u32 pid of the program */
#define FRAME_SPAWN_FAILED 34 /* payload: one line */
#define FRAME_STDOUT 35
#define FRAME_STDERR 36
#define FRAME_EXIT 37      /* payload: u8 kind (0 code, 1 signal), i32 value, u8 timed out */
#define FRAME_CONNECTED 38
#define FRAME_CONNECT_FAILED 39 /* payload: one line */
#define FRAME_LISTENING 40 /* payload: u16 port */
#define FRAME_LISTEN_FAILED 41 /* payload: one line */
#define FRAME_ACCEPTED 42  /* id: the new stream (>= 2^31); payload: u32 listener id */
#define FRAME_KILL_ALL_DONE 43
#define FRAME_ERROR 44     /* payload: one line; a broken frame from Belay, the executor ends */

#define HEADER 9
#define MAX_PAYLOAD (4u << 20)
#define CHUNK 65536
#define WINDOW_INITIAL 262144u
#define OUT_HIGH_WATER (1u << 20)
#define ACCEPTED_BASE 0x80000000u
/* A burst of connections waits in the kernel until accepted (the kernel caps it at net.core.somaxconn).
 * A full queue drops the handshake's last ACK, and a connection the SYN cookies let through then
 * exists only on the client's side: a client that waits for the server to speak first waits forever. */
#define LISTEN_BACKLOG 4096

static int chan_in = -1, chan_out = -1;

/* ---------------------------------------------------------------- buffers */

struct buf {
  unsigned char *data;
  size_t start, len, cap;
};

static void die(const char *what) {
  char line[256];
  int n = snprintf(line, sizeof line, "belay-exec: %s: %s\n", what, strerror(errno));
  if (n > 0) (void)!write(2, line, (size_t)n);
  _exit(70);
}

static void buf_reserve(struct buf *b, size_t more) {
  if (b->start > 0 && b->start + b->len + more > b->cap) {
    memmove(b->data, b->data + b->start, b->len);
    b->start = 0;
  }
  if (b->start + b->len + more <= b->cap) return;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->start + b->len + more) cap *= 2;
  unsigned char *data = realloc(b->data, cap);
  if (!data) die("out of memory");
  b->data = data;
  b->cap = cap;
}

static void buf_append(struct buf *b, const void *bytes, size_t n) {
  buf_reserve(b, n);
  memcpy(b->data + b->start + b->len, bytes, n);
  b->len += n;
}

static void buf_consume(struct buf *b, size_t n) {
  b->start += n;
  b->len -= n;
  if (b->len == 0) b->start = 0;
}

static void buf_free(struct buf *b) {
  free(b->data);
  memset(b, 0, sizeof *b);
}

static void put32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

static uint32_t get32(const unsigned char *p) {
  return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static struct buf out; /* frames waiting for the channel */

static void send_frame(int type, uint32_t id, const void *payload, size_t n) {
  unsigned char header[HEADER];
  put32(header, (uint32_t)(n + 5));
  header[4] = (unsigned char)type;
  put32(header + 5, id);
  buf_append(&out, header, HEADER);
  if (n) buf_append(&out, payload, n);
}

static void send_u32(int type, uint32_t id, uint32_t value) {
  unsigned char p[4];
  put32(p, value);
  send_frame(type, id, p, 4);
}

static void send_line(int type, uint32_t id, const char *line) {
  send_frame(type, id, line, strlen(line));
}

/* ---------------------------------------------------------------- commands */

/* What a shepherd tells the executor through its status pipe. */
struct status {
  int32_t kind; /* STATUS_* */
  int32_t a, b;
};
#define STATUS_STARTED 1 /* a: pid */
#define STATUS_FAILED 2  /* a: stage, b: errno */
#define STATUS_EXITED 3  /* a: code, b: timed out */
#define STATUS_SIGNALED 4 /* a: signal, b: timed out */
#define STAGE_CWD 1
#define STAGE_EXEC 2
#define STAGE_SETUP 3

struct command {
  struct command *next;
  uint32_t id;
  pid_t shepherd; /* 0 once reaped */
  pid_t pid;      /* the program, once started */
  int out_fd, err_fd, in_fd, status_fd;
  struct buf in;       /* stdin waiting for the pipe */
  int in_eof;          /* close stdin once `in` is written */
  uint32_t in_granted; /* stdin bytes written, not yet given back */
  uint32_t window;     /* output bytes Belay still accepts */
  struct status final; /* what the shepherd said last */
  int status_len;
  unsigned char status_part[sizeof(struct status)];
  int reported_start;
  int shepherd_signal; /* how the shepherd ended when it did not report */
  char *argv0;
  char *cwd;
};

static struct command *commands;
static int running, max_running = 1;
/* The fd limit the executor was given: its programs get it back (the executor raises its own). */
static struct rlimit original_files;
static int have_original_files;
/* Out of fds: listeners are not polled until a stream or command closes (poll would spin on them). */
static int accept_paused;

/* Spawns beyond what the fd limit allows at once wait here, in order. */
struct queued {
  struct queued *next;
  uint32_t id;
  struct buf in; /* stdin sent before it started (within its window) */
  int in_eof;
  size_t n;
  unsigned char payload[];
};
static struct queued *queue_head, **queue_tail = &queue_head;

struct stream {
  struct stream *next;
  uint32_t id;
  int fd;
  int connecting;
  int listener; /* a listening socket: accepts, carries no data */
  struct buf to_socket;
  int to_socket_eof;   /* shut down writing once to_socket is written */
  uint32_t granted;    /* bytes written to the socket, not yet given back */
  uint32_t window;     /* bytes Belay still accepts from this socket */
  int read_eof;        /* the socket's reading end reached EOF (sent) */
  int write_done;      /* writing side shut down */
};

static struct stream *streams;
static uint32_t next_accepted = ACCEPTED_BASE;

/* Kill-all requests waiting for every process to be gone. */
#define MAX_PENDING 64
static uint32_t pending_kill_all[MAX_PENDING];
static int pending_count;
static int kill_all_active;
static int closing; /* the channel ended: kill everything, then exit */

static int set_flags(int fd, int add) {
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0) return -1;
  return fcntl(fd, F_SETFL, fl | add);
}

/* Every process whose parent is `parent`, found by reading all of /proc (the slow way). */
static void children_by_scan(pid_t parent, void (*each)(pid_t pid, void *ctx), void *ctx) {
  DIR *dir = opendir("/proc");
  if (!dir) return;
  struct dirent *entry;
  while ((entry = readdir(dir)) != NULL) {
    if (entry->d_name[0] < '1' || entry->d_name[0] > '9') continue;
    char path[64], text[512];
    snprintf(path, sizeof path, "/proc/%.20s/stat", entry->d_name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0) continue;
    text[n] = 0;
    /* pid (comm) state ppid ...: comm may hold anything, so the last ')' ends it */
    char *close_paren = strrchr(text, ')');
    if (!close_paren) continue;
    int ppid = 0;
    char state = 0;
    if (sscanf(close_paren + 1, " %c %d", &state, &ppid) != 2) continue;
    if (ppid == parent) each((pid_t)atoi(entry->d_name), ctx);
  }
  closedir(dir);
}

/*
 * Calls `each` for every process whose parent is `parent`: /proc/<pid>/task/<tid>/children of
 * each of its threads where the kernel has them, else a scan of all of /proc.
 */
static void children_of(pid_t parent, void (*each)(pid_t pid, void *ctx), void *ctx) {
  char path[96];
  snprintf(path, sizeof path, "/proc/%d/task", (int)parent);
  DIR *tasks = opendir(path);
  if (!tasks) return; /* gone already */
  pid_t found[512];
  int count = 0, complete = 1;
  struct dirent *entry;
  while ((entry = readdir(tasks)) != NULL) {
    if (entry->d_name[0] < '1' || entry->d_name[0] > '9') continue;
    snprintf(path, sizeof path, "/proc/%d/task/%.20s/children", (int)parent, entry->d_name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT && count == 0) {
        closedir(tasks);
        children_by_scan(parent, each, ctx);
        return;
      }
      continue;
    }
    char text[4096];
    ssize_t n;
    size_t held = 0;
    while ((n = read(fd, text + held, sizeof text - 1 - held)) > 0) {
      held += (size_t)n;
      text[held] = 0;
      char *p = text, *end;
      for (;;) {
        long pid = strtol(p, &end, 10);
        if (end == p) break;
        if (*end == 0) break; /* may be cut: kept for the next read */
        if (count < (int)(sizeof found / sizeof found[0])) found[count++] = (pid_t)pid;
        else complete = 0;
        p = end;
      }
      held = strlen(p);
      memmove(text, p, held);
      if (held >= sizeof text - 1) held = 0;
    }
    if (held > 0) {
      text[held] = 0;
      long pid = strtol(text, NULL, 10);
      if (pid > 0 && count < (int)(sizeof found / sizeof found[0])) found[count++] = (pid_t)pid;
    }
    close(fd);
  }
  closedir(tasks);
  for (int i = 0; i < count; i++) each(found[i], ctx);
  (void)complete; /* the callers repeat until none is left, so more than 512 are met next time */
}

static void kill_one(pid_t pid, void *ctx) {
  (void)ctx;
  kill(pid, SIGKILL);
}

/* Closes every fd from `first` up (close_range where the kernel has it, else /proc/self/fd). */
static void close_from(int first) {
  if (syscall(SYS_close_range, (unsigned)first, ~0U, 0) == 0) return;
  DIR *dir = opendir("/proc/self/fd");
  if (!dir) {
    for (int fd = first; fd < 65536; fd++) close(fd);
    return;
  }
  int own = dirfd(dir);
  struct dirent *entry;
  while ((entry = readdir(dir)) != NULL) {
    int fd = atoi(entry->d_name);
    if (fd >= first && fd != own) close(fd);
  }
  closedir(dir);
}


/* ---------------------------------------------------------------- the shepherd */

static void write_status(int fd, int32_t kind, int32_t a, int32_t b) {
  struct status s = {kind, a, b};
  (void)!write(fd, &s, sizeof s);
}

/* Where the program is: argv[0] as given when it has a '/', else the first match on PATH. */
static void exec_program(char **argv, char **envp) {
  const char *file = argv[0];
  if (strchr(file, '/')) {
    execve(file, argv, envp);
    return;
  }
  const char *path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  for (char **e = envp; *e; e++)
    if (strncmp(*e, "PATH=", 5) == 0) path = *e + 5;
  int saw_eacces = 0;
  size_t flen = strlen(file);
  const char *p = path;
  for (;;) {
    const char *colon = strchr(p, ':');
    size_t dlen = colon ? (size_t)(colon - p) : strlen(p);
    char full[4096];
    if (dlen + flen + 2 <= sizeof full) {
      if (dlen == 0) {
        memcpy(full, file, flen + 1);
      } else {
        memcpy(full, p, dlen);
        full[dlen] = '/';
        memcpy(full + dlen + 1, file, flen + 1);
      }
      execve(full, argv, envp);
      if (errno == EACCES) saw_eacces = 1;
      else if (errno != ENOENT && errno != ENOTDIR) return;
    }
    if (!colon) break;
    p = colon + 1;
  }
  errno = saw_eacces ? EACCES : ENOENT;
}

struct spawn_request {
  uint32_t flags, timeout_ms;
  uint64_t fsize;
  char *cwd;
  char **argv, **envp;
};

/*
 * The shepherd: runs in the forked child, never returns. fds: 0, 1, 2 are the program's stdin,
 * stdout, stderr; `status` reports to the executor; nothing else is open.
 */
static void shepherd(struct spawn_request *req, int status, pid_t executor) {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  /* The executor gone (killed outright): end the tree as for a kill. */
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  sigset_t wait_set;
  sigemptyset(&wait_set);
  sigaddset(&wait_set, SIGCHLD);
  sigaddset(&wait_set, SIGTERM);
  sigprocmask(SIG_SETMASK, &wait_set, NULL);
  if (getppid() != executor) _exit(1); /* it died before the death signal was asked for */

  int exec_pipe[2];
  if (pipe2(exec_pipe, O_CLOEXEC) < 0) {
    write_status(status, STATUS_FAILED, STAGE_SETUP, errno);
    _exit(1);
  }
  pid_t pid = fork();
  if (pid < 0) {
    write_status(status, STATUS_FAILED, STAGE_SETUP, errno);
    _exit(1);
  }
  if (pid == 0) {
    close(exec_pipe[0]);
    close(status);
    setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    for (int sig = 1; sig < NSIG; sig++) signal(sig, SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
    prctl(PR_SET_PDEATHSIG, 0);
    if (have_original_files) setrlimit(RLIMIT_NOFILE, &original_files);
    if (req->fsize) {
      struct rlimit limit = {(rlim_t)req->fsize, (rlim_t)req->fsize};
      setrlimit(RLIMIT_FSIZE, &limit);
    }
    int32_t failure[2];
    if (chdir(req->cwd) < 0) {
      failure[0] = STAGE_CWD;
      failure[1] = errno;
    } else {
      exec_program(req->argv, req->envp);
      failure[0] = STAGE_EXEC;
      failure[1] = errno;
    }
    (void)!write(exec_pipe[1], failure, sizeof failure);
    _exit(127);
  }
  setpgid(pid, pid);
  close(exec_pipe[1]);
  /* The program holds the pipes now; the shepherd keeps none of them open. */
  int null_fd = open("/dev/null", O_RDWR);
  if (null_fd >= 0) {
    dup2(null_fd, 0);
    dup2(null_fd, 1);
    dup2(null_fd, 2);
    if (null_fd > 2) close(null_fd);
  }
  int32_t failure[2];
  ssize_t got;
  do got = read(exec_pipe[0], failure, sizeof failure);
  while (got < 0 && errno == EINTR);
  close(exec_pipe[0]);
  int started = got != (ssize_t)sizeof failure;
  if (started) write_status(status, STATUS_STARTED, pid, 0);
  else write_status(status, STATUS_FAILED, failure[0], failure[1]);

  struct timespec deadline = {0, 0};
  if (req->timeout_ms) {
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += req->timeout_ms / 1000;
    deadline.tv_nsec += (long)(req->timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
      deadline.tv_sec++;
      deadline.tv_nsec -= 1000000000L;
    }
  }
  int exited = 0, wstatus = 0, timed_out = 0;
  while (started && !exited) {
    siginfo_t info;
    int sig;
    if (req->timeout_ms) {
      struct timespec now, left;
      clock_gettime(CLOCK_MONOTONIC, &now);
      left.tv_sec = deadline.tv_sec - now.tv_sec;
      left.tv_nsec = deadline.tv_nsec - now.tv_nsec;
      if (left.tv_nsec < 0) {
        left.tv_sec--;
        left.tv_nsec += 1000000000L;
      }
      if (left.tv_sec < 0) {
        timed_out = 1;
        break;
      }
      sig = sigtimedwait(&wait_set, &info, &left);
      if (sig < 0 && errno == EAGAIN) {
        timed_out = 1;
        break;
      }
    } else {
      sig = sigwaitinfo(&wait_set, &info);
    }
    if (sig == SIGTERM) break;
    if (sig == SIGCHLD) {
      int st;
      pid_t done;
      while ((done = waitpid(-1, &st, WNOHANG)) > 0)
        if (done == pid) {
          exited = 1;
          wstatus = st;
        }
    }
  }
  /* End whatever is left below: the group, then every child of ours until there is none. */
  kill(-pid, SIGKILL);
  if (!exited) kill(pid, SIGKILL);
  for (;;) {
    int st;
    pid_t done = waitpid(-1, &st, WNOHANG);
    if (done == 0) {
      children_of(getpid(), kill_one, NULL);
      done = waitpid(-1, &st, 0);
    }
    if (done < 0) {
      if (errno == EINTR) continue;
      break; /* ECHILD: nothing is left */
    }
    if (done == pid && !exited) {
      exited = 1;
      wstatus = st;
    }
  }
  if (started) {
    if (WIFEXITED(wstatus)) write_status(status, STATUS_EXITED, WEXITSTATUS(wstatus), timed_out);
    else write_status(status, STATUS_SIGNALED, WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : SIGKILL, timed_out);
  }
  _exit(0);
}

/* ---------------------------------------------------------------- executor side */

/* A command killed before it started: it ends as killed. */
static void send_killed(uint32_t id) {
  unsigned char p[6] = {1, 0, 0, 0, SIGKILL, 0};
  send_frame(FRAME_EXIT, id, p, 6);
}

static struct command *find_command(uint32_t id) {
  for (struct command *c = commands; c; c = c->next)
    if (c->id == id) return c;
  return NULL;
}

static struct stream *find_stream(uint32_t id) {
  for (struct stream *s = streams; s; s = s->next)
    if (s->id == id) return s;
  return NULL;
}

static int read_string(const unsigned char **p, const unsigned char *end, char **result) {
  if (end - *p < 4) return -1;
  uint32_t n = get32(*p);
  *p += 4;
  if ((uint32_t)(end - *p) < n) return -1;
  if (memchr(*p, 0, n)) return -1;
  char *s = malloc(n + 1);
  if (!s) die("out of memory");
  memcpy(s, *p, n);
  s[n] = 0;
  *p += n;
  *result = s;
  return 0;
}

static void free_request(struct spawn_request *req) {
  free(req->cwd);
  if (req->argv)
    for (char **a = req->argv; *a; a++) free(*a);
  if (req->envp)
    for (char **e = req->envp; *e; e++) free(*e);
  free(req->argv);
  free(req->envp);
}

/*
 * SPAWN payload: u32 flags (1: stdin is a pipe), u32 timeout ms (0: none), u32 fsize high,
 * u32 fsize low (0: no limit), u32 argc, u32 envc, then strings (u32 length, bytes, no NUL):
 * cwd, argv[0..argc), env[0..envc) as NAME=value.
 */
static int parse_spawn(const unsigned char *p, size_t n, struct spawn_request *req) {
  const unsigned char *end = p + n;
  memset(req, 0, sizeof *req);
  if (n < 24) return -1;
  req->flags = get32(p);
  req->timeout_ms = get32(p + 4);
  req->fsize = ((uint64_t)get32(p + 8) << 32) | get32(p + 12);
  uint32_t argc = get32(p + 16), envc = get32(p + 20);
  p += 24;
  if (argc == 0 || argc > n || envc > n) return -1;
  req->argv = calloc(argc + 1, sizeof(char *));
  req->envp = calloc(envc + 1, sizeof(char *));
  if (!req->argv || !req->envp) die("out of memory");
  if (read_string(&p, end, &req->cwd) < 0) return -1;
  for (uint32_t i = 0; i < argc; i++)
    if (read_string(&p, end, &req->argv[i]) < 0) return -1;
  for (uint32_t i = 0; i < envc; i++)
    if (read_string(&p, end, &req->envp[i]) < 0) return -1;
  return p == end ? 0 : -1;
}

static void spawn_failed(uint32_t id, const char *program, const char *reason, int err) {
  char line[512];
  snprintf(line, sizeof line, "%.200s: %s (%s)", program, reason, strerrorname_np(err) ? strerrorname_np(err) : strerror(err));
  send_line(FRAME_SPAWN_FAILED, id, line);
}

static void start_command(uint32_t id, const unsigned char *payload, size_t n) {
  struct spawn_request req;
  if (find_command(id) || parse_spawn(payload, n, &req) < 0) {
    if (!find_command(id)) free_request(&req);
    send_line(FRAME_SPAWN_FAILED, id, "belay-exec: a malformed spawn request");
    return;
  }
  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, in_pipe[2] = {-1, -1}, status_pipe[2] = {-1, -1};
  int pipe_stdin = req.flags & 1;
  int *all[] = {out_pipe, err_pipe, in_pipe, status_pipe};
  pid_t pid = -1, executor_pid = getpid();
  /* SIGTERM (a kill) waits blocked until the shepherd waits for it: a kill right after the
     spawn ends the tree instead of the shepherd alone. */
  sigset_t term, before;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigprocmask(SIG_BLOCK, &term, &before);
  if (pipe2(out_pipe, O_CLOEXEC) == 0 && pipe2(err_pipe, O_CLOEXEC) == 0 && pipe2(status_pipe, O_CLOEXEC) == 0 &&
      (!pipe_stdin || pipe2(in_pipe, O_CLOEXEC) == 0))
    pid = fork();
  if (pid != 0) sigprocmask(SIG_SETMASK, &before, NULL);
  if (pid < 0) {
    int err = errno;
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 2; j++)
        if (all[i][j] >= 0) close(all[i][j]);
    spawn_failed(id, req.argv[0], err == EMFILE || err == ENFILE || err == EAGAIN ? "too many processes or files open" : "could not start", err);
    free_request(&req);
    return;
  }
  if (pid == 0) {
    /* Lay out 0..3 (stdin, stdout, stderr, status), then close everything else. */
    int in_fd = pipe_stdin ? in_pipe[0] : open("/dev/null", O_RDONLY | O_CLOEXEC);
    int keep[4] = {in_fd, out_pipe[1], err_pipe[1], status_pipe[1]};
    /* Copies above 3 first: a pipe end may itself sit at 0..3. */
    for (int i = 0; i < 4; i++) keep[i] = fcntl(keep[i], F_DUPFD_CLOEXEC, 10);
    for (int i = 0; i < 4; i++)
      if (keep[i] < 0 || dup2(keep[i], i) < 0) _exit(1);
    close_from(4);
    /* dup2 cleared close-on-exec on 0..2 (the program's); the status fd must not reach it. */
    fcntl(3, F_SETFD, FD_CLOEXEC);
    shepherd(&req, 3, executor_pid);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  close(status_pipe[1]);
  if (pipe_stdin) close(in_pipe[0]);
  struct command *c = calloc(1, sizeof *c);
  if (!c) die("out of memory");
  c->id = id;
  c->shepherd = pid;
  c->out_fd = out_pipe[0];
  c->err_fd = err_pipe[0];
  c->in_fd = pipe_stdin ? in_pipe[1] : -1;
  c->status_fd = status_pipe[0];
  c->window = WINDOW_INITIAL;
  c->argv0 = strdup(req.argv[0]);
  c->cwd = strdup(req.cwd);
  set_flags(c->out_fd, O_NONBLOCK);
  set_flags(c->err_fd, O_NONBLOCK);
  set_flags(c->status_fd, O_NONBLOCK);
  if (c->in_fd >= 0) set_flags(c->in_fd, O_NONBLOCK);
  c->next = commands;
  commands = c;
  running++;
  free_request(&req);
}

static void write_stdin(struct command *c);
static void close_stdin(struct command *c);

static struct queued *find_queued(uint32_t id) {
  for (struct queued *q = queue_head; q; q = q->next)
    if (q->id == id) return q;
  return NULL;
}

static void enqueue(uint32_t id, const unsigned char *p, size_t n) {
  struct queued *q = malloc(sizeof *q + n);
  if (!q) die("out of memory");
  memset(q, 0, sizeof *q);
  q->id = id;
  q->n = n;
  memcpy(q->payload, p, n);
  *queue_tail = q;
  queue_tail = &q->next;
}

static void start_queued(void) {
  while (queue_head && running < max_running) {
    struct queued *q = queue_head;
    queue_head = q->next;
    if (!queue_head) queue_tail = &queue_head;
    start_command(q->id, q->payload, q->n);
    struct command *c = find_command(q->id);
    if (c && c->in_fd >= 0) {
      buf_append(&c->in, q->in.data + q->in.start, q->in.len);
      c->in_eof = q->in_eof;
      if (c->in.len > 0) write_stdin(c);
      else if (c->in_eof) close_stdin(c);
    }
    buf_free(&q->in);
    free(q);
  }
}

static int drop_queued(uint32_t id) {
  for (struct queued **link = &queue_head; *link; link = &(*link)->next) {
    struct queued *q = *link;
    if (id != 0 && q->id != id) continue;
    *link = q->next;
    if (queue_tail == &q->next) queue_tail = link;
    send_killed(q->id);
    buf_free(&q->in);
    free(q);
    return 1;
  }
  return 0;
}

static void close_stdin(struct command *c) {
  if (c->in_fd >= 0) close(c->in_fd);
  c->in_fd = -1;
  buf_free(&c->in);
}

static void finish_command(struct command *c) {
  unsigned char p[6];
  if (c->final.kind == STATUS_FAILED) {
    char reason[300];
    if (c->final.a == STAGE_CWD)
      snprintf(reason, sizeof reason, c->final.b == ENOENT ? "its working folder %.200s does not exist" : "its working folder %.200s cannot be entered", c->cwd);
    else
      snprintf(reason, sizeof reason, "%s", c->final.b == ENOENT ? "not found" : c->final.b == EACCES ? "not executable" : "could not start");
    spawn_failed(c->id, c->argv0, reason, c->final.b);
  } else if (!c->reported_start) {
    /* The shepherd was killed before the program started: the command ends as killed. */
    send_killed(c->id);
  } else {
    if (c->final.kind == STATUS_EXITED) {
      p[0] = 0;
      put32(p + 1, (uint32_t)c->final.a);
      p[5] = (unsigned char)c->final.b;
    } else if (c->final.kind == STATUS_SIGNALED) {
      p[0] = 1;
      put32(p + 1, (uint32_t)c->final.a);
      p[5] = (unsigned char)c->final.b;
    } else {
      /* The shepherd was killed (by the command itself, or a kill-all): the tree is killed. */
      p[0] = 1;
      put32(p + 1, (uint32_t)(c->shepherd_signal ? c->shepherd_signal : SIGKILL));
      p[5] = 0;
    }
    send_frame(FRAME_EXIT, c->id, p, 6);
  }
  close_stdin(c);
  if (c->out_fd >= 0) close(c->out_fd);
  if (c->err_fd >= 0) close(c->err_fd);
  if (c->status_fd >= 0) close(c->status_fd);
  struct command **link = &commands;
  while (*link != c) link = &(*link)->next;
  *link = c->next;
  running--;
  accept_paused = 0;
  free(c->argv0);
  free(c->cwd);
  free(c);
}

static void maybe_finish(struct command *c) {
  if (c->shepherd == 0 && c->out_fd < 0 && c->err_fd < 0 && c->status_fd < 0) finish_command(c);
}

static void read_status(struct command *c) {
  for (;;) {
    ssize_t n = read(c->status_fd, c->status_part + c->status_len, sizeof(struct status) - (size_t)c->status_len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      close(c->status_fd);
      c->status_fd = -1;
      return;
    }
    c->status_len += (int)n;
    if (c->status_len < (int)sizeof(struct status)) continue;
    c->status_len = 0;
    struct status s;
    memcpy(&s, c->status_part, sizeof s);
    if (s.kind == STATUS_STARTED) {
      c->pid = s.a;
      c->reported_start = 1;
      send_u32(FRAME_SPAWNED, c->id, (uint32_t)s.a);
    } else {
      c->final = s;
    }
  }
}

static void read_output(struct command *c, int err) {
  int *fd = err ? &c->err_fd : &c->out_fd;
  unsigned char chunk[CHUNK];
  size_t want = c->window < CHUNK ? c->window : CHUNK;
  if (want == 0) return;
  ssize_t n = read(*fd, chunk, want);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    close(*fd);
    *fd = -1;
    return;
  }
  c->window -= (uint32_t)n;
  send_frame(err ? FRAME_STDERR : FRAME_STDOUT, c->id, chunk, (size_t)n);
}

static void write_stdin(struct command *c) {
  while (c->in.len > 0) {
    ssize_t n = write(c->in_fd, c->in.data + c->in.start, c->in.len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n < 0) {
      /* The program closed its stdin: what is left is dropped, and given back. */
      c->in_granted += (uint32_t)c->in.len;
      buf_consume(&c->in, c->in.len);
      close_stdin(c);
      c->in_eof = 1;
      break;
    }
    c->in_granted += (uint32_t)n;
    buf_consume(&c->in, (size_t)n);
  }
  if (c->in_granted > 0) {
    send_u32(FRAME_WINDOW, c->id, c->in_granted);
    c->in_granted = 0;
  }
  if (c->in.len == 0 && c->in_eof && c->in_fd >= 0) close_stdin(c);
}

/* ---------------------------------------------------------------- streams */

static struct stream *new_stream(uint32_t id, int fd) {
  struct stream *s = calloc(1, sizeof *s);
  if (!s) die("out of memory");
  s->id = id;
  s->fd = fd;
  s->window = WINDOW_INITIAL;
  s->next = streams;
  streams = s;
  return s;
}

static void drop_stream(struct stream *s, const char *why) {
  accept_paused = 0;
  if (why) send_line(FRAME_CLOSE, s->id, why);
  if (s->fd >= 0) close(s->fd);
  buf_free(&s->to_socket);
  struct stream **link = &streams;
  while (*link != s) link = &(*link)->next;
  *link = s->next;
  free(s);
}

static void loopback(struct sockaddr_in *addr, unsigned port) {
  memset(addr, 0, sizeof *addr);
  addr->sin_family = AF_INET;
  addr->sin_port = htons((uint16_t)port);
  addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

static void fail_line(int type, uint32_t id, const char *what, unsigned port, int err) {
  char line[256];
  snprintf(line, sizeof line, "%s 127.0.0.1:%u: %s (%s)", what, port, strerror(err), strerrorname_np(err) ? strerrorname_np(err) : "?");
  send_line(type, id, line);
}

static void start_connect(uint32_t id, const unsigned char *p, size_t n) {
  if (n != 2 || find_stream(id)) {
    send_line(FRAME_CONNECT_FAILED, id, "belay-exec: a malformed connect request");
    return;
  }
  unsigned port = (unsigned)(p[0] << 8 | p[1]);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    fail_line(FRAME_CONNECT_FAILED, id, "connect to", port, errno);
    return;
  }
  struct sockaddr_in addr;
  loopback(&addr, port);
  if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0 && errno != EINPROGRESS) {
    fail_line(FRAME_CONNECT_FAILED, id, "connect to", port, errno);
    close(fd);
    return;
  }
  new_stream(id, fd)->connecting = 1;
}

static void start_listen(uint32_t id, const unsigned char *p, size_t n) {
  if (n != 2 || find_stream(id)) {
    send_line(FRAME_LISTEN_FAILED, id, "belay-exec: a malformed listen request");
    return;
  }
  unsigned port = (unsigned)(p[0] << 8 | p[1]);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  struct sockaddr_in addr;
  loopback(&addr, port);
  socklen_t len = sizeof addr;
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 || bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0 ||
      listen(fd, LISTEN_BACKLOG) < 0 || getsockname(fd, (struct sockaddr *)&addr, &len) < 0) {
    fail_line(FRAME_LISTEN_FAILED, id, "listen on", port, errno);
    if (fd >= 0) close(fd);
    return;
  }
  struct stream *s = new_stream(id, fd);
  s->listener = 1;
  unsigned char bound[2] = {(unsigned char)(ntohs(addr.sin_port) >> 8), (unsigned char)ntohs(addr.sin_port)};
  send_frame(FRAME_LISTENING, id, bound, 2);
}

/* Out of fds: listeners are not polled until a stream closes (else poll would spin on them). */

static void accept_all(struct stream *listener) {
  for (;;) {
    int fd = accept4(listener->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) accept_paused = 1;
      return;
    }
    uint32_t id = next_accepted++;
    if (next_accepted == 0) next_accepted = ACCEPTED_BASE;
    new_stream(id, fd);
    send_u32(FRAME_ACCEPTED, id, listener->id);
  }
}

static void stream_writable(struct stream *s) {
  if (s->connecting) {
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err) {
      struct sockaddr_in addr;
      socklen_t alen = sizeof addr;
      unsigned port = getpeername(s->fd, (struct sockaddr *)&addr, &alen) == 0 ? ntohs(addr.sin_port) : 0;
      (void)port;
      char line[160];
      snprintf(line, sizeof line, "connect: %s (%s)", strerror(err), strerrorname_np(err) ? strerrorname_np(err) : "?");
      send_line(FRAME_CONNECT_FAILED, s->id, line);
      drop_stream(s, NULL);
      return;
    }
    s->connecting = 0;
    send_frame(FRAME_CONNECTED, s->id, NULL, 0);
  }
  while (s->to_socket.len > 0) {
    ssize_t n = send(s->fd, s->to_socket.data + s->to_socket.start, s->to_socket.len, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n < 0) {
      drop_stream(s, strerror(errno));
      return;
    }
    s->granted += (uint32_t)n;
    buf_consume(&s->to_socket, (size_t)n);
  }
  if (s->granted) {
    send_u32(FRAME_WINDOW, s->id, s->granted);
    s->granted = 0;
  }
  if (s->to_socket.len == 0 && s->to_socket_eof && !s->write_done) {
    shutdown(s->fd, SHUT_WR);
    s->write_done = 1;
  }
  if (s->write_done && s->read_eof) drop_stream(s, "");
}

static void stream_readable(struct stream *s) {
  unsigned char chunk[CHUNK];
  size_t want = s->window < CHUNK ? s->window : CHUNK;
  if (want == 0) return;
  ssize_t n = recv(s->fd, chunk, want, 0);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n < 0) {
    drop_stream(s, strerror(errno));
    return;
  }
  if (n == 0) {
    s->read_eof = 1;
    send_frame(FRAME_EOF, s->id, NULL, 0);
    if (s->write_done) drop_stream(s, "");
    return;
  }
  s->window -= (uint32_t)n;
  send_frame(FRAME_DATA, s->id, chunk, (size_t)n);
}

/* ---------------------------------------------------------------- kill-all */

struct sweep {
  int found;
};

static int is_shepherd(pid_t pid) {
  for (struct command *c = commands; c; c = c->next)
    if (c->shepherd == pid) return 1;
  return 0;
}

/* Every process below the executor: shepherds get SIGTERM (they end their trees), the rest SIGKILL. */
static void sweep_one(pid_t pid, void *ctx) {
  struct sweep *sw = ctx;
  sw->found++;
  if (is_shepherd(pid)) {
    /* A shepherd ends its tree and says how the program ended; a stopped one is woken first. */
    kill(pid, SIGCONT);
    kill(pid, SIGTERM);
  } else {
    kill(pid, SIGKILL);
  }
  children_of(pid, sweep_one, ctx);
}

static int sweep(void) {
  struct sweep sw = {0};
  children_of(getpid(), sweep_one, &sw);
  return sw.found;
}

/* ---------------------------------------------------------------- frames from Belay */

static void protocol_error(const char *line) {
  send_line(FRAME_ERROR, 0, line);
  closing = 1;
}

static void handle_frame(int type, uint32_t id, const unsigned char *p, size_t n) {
  struct command *c;
  struct stream *s;
  switch (type) {
  case FRAME_SPAWN:
    /* Commands sent after a kill-all start once it is done, so that it does not end them too. */
    if (queue_head || running >= max_running || kill_all_active) enqueue(id, p, n);
    else start_command(id, p, n);
    break;
  case FRAME_STDIN:
    c = find_command(id);
    if (!c) {
      struct queued *q = find_queued(id);
      if (!q || q->in_eof) break;
      if (q->in.len + n > WINDOW_INITIAL) {
        protocol_error("belay-exec: stdin beyond its window");
        break;
      }
      buf_append(&q->in, p, n);
      break;
    }
    if (c->in_fd < 0 || c->in_eof) {
      /* Nowhere to go (stdin ignored or closed): dropped, and given back. */
      if (n) send_u32(FRAME_WINDOW, id, (uint32_t)n);
      break;
    }
    if (c->in.len + n > WINDOW_INITIAL) {
      protocol_error("belay-exec: stdin beyond its window");
      break;
    }
    buf_append(&c->in, p, n);
    write_stdin(c);
    break;
  case FRAME_STDIN_EOF:
    c = find_command(id);
    if (!c) {
      struct queued *q = find_queued(id);
      if (q) q->in_eof = 1;
      break;
    }
    c->in_eof = 1;
    if (c->in.len == 0) close_stdin(c);
    break;
  case FRAME_KILL:
    if (drop_queued(id)) break;
    c = find_command(id);
    if (c && c->shepherd) {
      kill(c->shepherd, SIGCONT);
      kill(c->shepherd, SIGTERM);
    }
    break;
  case FRAME_CONNECT:
    start_connect(id, p, n);
    break;
  case FRAME_LISTEN:
    start_listen(id, p, n);
    break;
  case FRAME_UNLISTEN:
    s = find_stream(id);
    if (s && s->listener) drop_stream(s, NULL);
    break;
  case FRAME_KILL_ALL:
    if (pending_count == MAX_PENDING) {
      protocol_error("belay-exec: too many kill-all requests at once");
      break;
    }
    pending_kill_all[pending_count++] = id;
    /* Commands still waiting for room were sent before this kill-all: they end as killed. */
    while (drop_queued(0)) {
    }
    kill_all_active = 1;
    sweep();
    break;
  case FRAME_DATA:
    s = find_stream(id);
    if (!s || s->listener) break;
    if (s->to_socket_eof) break;
    if (s->to_socket.len + n > WINDOW_INITIAL) {
      protocol_error("belay-exec: stream data beyond its window");
      break;
    }
    buf_append(&s->to_socket, p, n);
    if (!s->connecting) stream_writable(s);
    break;
  case FRAME_EOF:
    s = find_stream(id);
    if (!s || s->listener) break;
    s->to_socket_eof = 1;
    if (!s->connecting) stream_writable(s);
    break;
  case FRAME_CLOSE:
    s = find_stream(id);
    if (s && !s->listener) drop_stream(s, NULL);
    break;
  case FRAME_WINDOW:
    if (n != 4) {
      protocol_error("belay-exec: a malformed window frame");
      break;
    }
    if ((c = find_command(id)) != NULL) {
      uint64_t w = (uint64_t)c->window + get32(p);
      c->window = w > WINDOW_INITIAL ? WINDOW_INITIAL : (uint32_t)w;
    } else if ((s = find_stream(id)) != NULL) {
      uint64_t w = (uint64_t)s->window + get32(p);
      s->window = w > WINDOW_INITIAL ? WINDOW_INITIAL : (uint32_t)w;
    }
    break;
  default: {
    char line[80];
    snprintf(line, sizeof line, "belay-exec: unknown frame type %d", type);
    protocol_error(line);
  }
  }
}

static struct buf in;

static void read_channel(void) {
  buf_reserve(&in, 65536);
  ssize_t n = read(chan_in, in.data + in.start + in.len, in.cap - in.start - in.len);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    closing = 1;
    return;
  }
  in.len += (size_t)n;
  while (!closing && in.len >= HEADER) {
    const unsigned char *h = in.data + in.start;
    uint32_t length = get32(h);
    if (length < 5 || length - 5 > MAX_PAYLOAD) {
      protocol_error("belay-exec: a frame of a wrong length");
      return;
    }
    if (in.len < 4 + (size_t)length) {
      buf_reserve(&in, 4 + (size_t)length - in.len);
      return;
    }
    handle_frame(h[4], get32(h + 5), h + HEADER, length - 5);
    buf_consume(&in, 4 + (size_t)length);
  }
}

static void flush_channel(void) {
  while (out.len > 0) {
    ssize_t n = write(chan_out, out.data + out.start, out.len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n < 0) {
      /* Nobody reads the channel any more: end as for its end. */
      buf_consume(&out, out.len);
      closing = 2;
      return;
    }
    buf_consume(&out, (size_t)n);
  }
}

/* ---------------------------------------------------------------- main loop */

static int sigchld_fd;

static void reap(void) {
  struct signalfd_siginfo info;
  while (read(sigchld_fd, &info, sizeof info) > 0) {
  }
  int st;
  pid_t pid;
  while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
    for (struct command *c = commands; c; c = c->next) {
      if (c->shepherd != pid) continue;
      c->shepherd = 0;
      if (c->status_fd >= 0) read_status(c);
      if (c->final.kind != STATUS_EXITED && c->final.kind != STATUS_SIGNALED && c->final.kind != STATUS_FAILED) {
        /*
         * The shepherd was killed before it ended its tree: kill the group now; what left the
         * group is killed at the next kill-all. The output is not waited for (it may be held
         * by such a process for ever).
         */
        c->shepherd_signal = WIFSIGNALED(st) ? WTERMSIG(st) : SIGKILL;
        if (c->pid > 0) kill(-c->pid, SIGKILL);
        if (c->out_fd >= 0) close(c->out_fd);
        if (c->err_fd >= 0) close(c->err_fd);
        c->out_fd = c->err_fd = -1;
      }
      break;
    }
  }
}

static int has_children(void) {
  /* waitid with WNOWAIT|WNOHANG: ECHILD when none is left, dead or alive. */
  siginfo_t info;
  info.si_pid = 0;
  return waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) == 0;
}

#define MAX_FDS 65536
static struct pollfd fds[MAX_FDS];
enum { KIND_CHAN_IN, KIND_CHAN_OUT, KIND_SIGCHLD, KIND_OUT, KIND_ERR, KIND_STATUS, KIND_STDIN, KIND_STREAM };
struct slot {
  int kind;
  void *owner;
};
static struct slot slots[MAX_FDS];

int main(int argc, char **argv) {
  /* The channel: moved off 0 and 1 to close-on-exec fds, 0 and 1 pointed at /dev/null. */
  chan_in = fcntl(0, F_DUPFD_CLOEXEC, 3);
  chan_out = fcntl(1, F_DUPFD_CLOEXEC, 3);
  if (chan_in < 0 || chan_out < 0) die("the channel");
  int null_fd = open("/dev/null", O_RDWR);
  if (null_fd < 0) die("/dev/null");
  dup2(null_fd, 0);
  dup2(null_fd, 1);
  if (null_fd > 2) close(null_fd);
  set_flags(chan_in, O_NONBLOCK);
  set_flags(chan_out, O_NONBLOCK);
  prctl(PR_SET_DUMPABLE, 0);
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  signal(SIGPIPE, SIG_IGN);
  /* Each running command holds up to 6 fds here (stdin, stdout, stderr, status, and in the fork). */
  struct rlimit files;
  if (getrlimit(RLIMIT_NOFILE, &files) == 0) {
    original_files = files;
    have_original_files = 1;
    if (files.rlim_cur < files.rlim_max) {
      files.rlim_cur = files.rlim_max > MAX_FDS ? MAX_FDS : files.rlim_max;
      setrlimit(RLIMIT_NOFILE, &files);
      getrlimit(RLIMIT_NOFILE, &files);
    }
    long room = ((long)(files.rlim_cur > MAX_FDS ? MAX_FDS : files.rlim_cur) - 64) / 6;
    max_running = room < 1 ? 1 : room > 1024 ? 1024 : (int)room;
  }
  /* --max-running=N: fewer commands at once (the rest wait their turn, in order). */
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--max-running=", 14) == 0) {
      long n = strtol(argv[i] + 14, NULL, 10);
      if (n >= 1 && n < max_running) max_running = (int)n;
    } else {
      fprintf(stderr, "belay-exec: unknown argument %.100s (the only one is --max-running=N)\n", argv[i]);
      return 64;
    }
  }
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, NULL);
  sigchld_fd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sigchld_fd < 0) die("signalfd");

  unsigned char ready[8];
  put32(ready, PROTOCOL_VERSION);
  put32(ready + 4, (uint32_t)getpid());
  send_frame(FRAME_READY, 0, ready, 8);

  int closing_swept = 0;
  for (;;) {
    if (closing && !kill_all_active) {
      kill_all_active = 1;
    }
    if (kill_all_active) {
      int found = sweep();
      reap();
      if (found == 0 && !has_children()) {
        for (int i = 0; i < pending_count; i++) send_frame(FRAME_KILL_ALL_DONE, pending_kill_all[i], NULL, 0);
        pending_count = 0;
        kill_all_active = 0;
        if (closing) closing_swept = 1;
      }
    }
    if (closing && closing_swept) {
      /* Every process is gone; what is left of the output goes out if the channel still takes it. */
      set_flags(chan_out, 0);
      int fl = fcntl(chan_out, F_GETFL);
      fcntl(chan_out, F_SETFL, fl & ~O_NONBLOCK);
      if (closing != 2) flush_channel();
      _exit(0);
    }

    int n = 0;
    fds[n] = (struct pollfd){sigchld_fd, POLLIN, 0};
    slots[n++] = (struct slot){KIND_SIGCHLD, NULL};
    if (!closing) {
      fds[n] = (struct pollfd){chan_in, POLLIN, 0};
      slots[n++] = (struct slot){KIND_CHAN_IN, NULL};
    }
    if (out.len > 0 && closing != 2) {
      fds[n] = (struct pollfd){chan_out, POLLOUT, 0};
      slots[n++] = (struct slot){KIND_CHAN_OUT, NULL};
    }
    int room = out.len < OUT_HIGH_WATER;
    for (struct command *c = commands; c && n < MAX_FDS - 4; c = c->next) {
      if (c->out_fd >= 0 && c->window > 0 && room) {
        fds[n] = (struct pollfd){c->out_fd, POLLIN, 0};
        slots[n++] = (struct slot){KIND_OUT, c};
      }
      if (c->err_fd >= 0 && c->window > 0 && room) {
        fds[n] = (struct pollfd){c->err_fd, POLLIN, 0};
        slots[n++] = (struct slot){KIND_ERR, c};
      }
      if (c->status_fd >= 0) {
        fds[n] = (struct pollfd){c->status_fd, POLLIN, 0};
        slots[n++] = (struct slot){KIND_STATUS, c};
      }
      if (c->in_fd >= 0 && c->in.len > 0) {
        fds[n] = (struct pollfd){c->in_fd, POLLOUT, 0};
        slots[n++] = (struct slot){KIND_STDIN, c};
      }
    }
    for (struct stream *s = streams; s && n < MAX_FDS - 1; s = s->next) {
      short events = 0;
      if (s->listener) events = room && !accept_paused ? POLLIN : 0;
      else if (s->connecting) events = POLLOUT;
      else {
        if (!s->read_eof && s->window > 0 && room) events |= POLLIN;
        if (s->to_socket.len > 0) events |= POLLOUT;
      }
      if (!events) continue;
      fds[n] = (struct pollfd){s->fd, events, 0};
      slots[n++] = (struct slot){KIND_STREAM, s};
    }
    int ready_count = poll(fds, (nfds_t)n, kill_all_active ? 10 : -1);
    if (ready_count < 0) {
      if (errno == EINTR) continue;
      die("poll");
    }
    /*
     * Handle what is ready. Handlers may free commands and streams, so each slot's owner is
     * looked up again before use.
     */
    for (int i = 0; i < n; i++) {
      short re = fds[i].revents;
      if (!re) continue;
      struct slot slot = slots[i];
      if (slot.kind == KIND_CHAN_IN) {
        read_channel();
        continue;
      }
      if (slot.kind == KIND_CHAN_OUT) {
        flush_channel();
        continue;
      }
      if (slot.kind == KIND_SIGCHLD) {
        reap();
        continue;
      }
      if (slot.kind == KIND_STREAM) {
        struct stream *s;
        for (s = streams; s && s != slot.owner; s = s->next) {
        }
        if (!s || s->fd != fds[i].fd) continue;
        if (s->listener) {
          accept_all(s);
          continue;
        }
        if (re & (POLLOUT | POLLERR | POLLHUP) && (s->connecting || s->to_socket.len > 0)) {
          uint32_t id = s->id;
          stream_writable(s);
          if (find_stream(id) != s) continue;
        }
        if (re & (POLLIN | POLLHUP | POLLERR) && !s->connecting && !s->read_eof) stream_readable(s);
        continue;
      }
      struct command *c;
      for (c = commands; c && c != slot.owner; c = c->next) {
      }
      if (!c) continue;
      if (slot.kind == KIND_OUT && c->out_fd == fds[i].fd) read_output(c, 0);
      else if (slot.kind == KIND_ERR && c->err_fd == fds[i].fd) read_output(c, 1);
      else if (slot.kind == KIND_STATUS && c->status_fd == fds[i].fd) read_status(c);
      else if (slot.kind == KIND_STDIN && c->in_fd == fds[i].fd) write_stdin(c);
    }
    for (struct command *c = commands, *next; c; c = next) {
      next = c->next;
      maybe_finish(c);
    }
    if (!closing && !kill_all_active) start_queued();
    if (out.len > 0 && closing != 2) flush_channel();
  }
}
