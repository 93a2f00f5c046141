# weft.py — gdb commands for programs that use weft: the tasks of a live
# process or a core file, and the stacks of parked ones.
#
#   (gdb) source /usr/local/share/weft/gdb/weft.py     (or tools/gdb/weft.py)
#   (gdb) info weft-tasks [POOL]   every live task: id, name, state, what it
#                                  waits on, its pool and worker
#   (gdb) weft-bt TASK [--fp]      a parked task's backtrace (TASK: its id or
#                                  its name); --fp walks frame pointers
#                                  instead of letting gdb unwind
#   (gdb) weft-frame TASK [N]      select frame N of that backtrace, for
#                                  `info locals`, `print`, `up`, `down`...
#   (gdb) weft-frame off           back to the thread's own frames
#
# Nothing here needs the program's help: the commands read weft's records
# through the library's debug information (build with -g; weft's default
# buildtype, debugoptimized, has it), the way the dump does in-process
# (src/sched/dump.c): every task record is in a chunk of records.c's list
# `chunks`; a record is live while its co.flags has WEFT__CORO_HOSTED; a
# parked task's registers are in the frame its switch saved at co.sp
# (src/ctx/switch_*.S).  A task's stack is given to gdb by a frame unwinder
# that, while a weft-bt or weft-frame is in effect, makes the selected
# thread's innermost frame return into the task's saved context; gdb then
# unwinds the rest from the debug information, as for any thread, so it
# works the same on a core file (gcore) and on a live process, and never
# writes a register.

import gdb

try:
    from gdb.unwinder import Unwinder, register_unwinder
except ImportError:  # gdb without Python unwinders (before 7.10)
    Unwinder = None

# Fallbacks for when the debug information lacks the enumerators.
_HOSTED = 8
_LIFECYCLE = 3
_LIFECYCLES = {0: 'idle', 1: 'runnable', 2: 'running', 3: 'complete'}


def _constant(name, default):
    try:
        return int(gdb.parse_and_eval(name))
    except gdb.error:
        return default


def _arch():
    name = gdb.selected_inferior().architecture().name()
    return 'aarch64' if 'aarch64' in name else 'x86_64'


# The switch's saved frame (ctx/ctx.h, switch_*.S): register -> offset from
# the saved sp, the return address (where the context resumes), and the
# frame's size (the sp of the code that switched is saved sp + size).
_FRAMES = {
    'x86_64': ({'rbp': 48, 'rbx': 40, 'r15': 32, 'r14': 24, 'r13': 16,
                'r12': 8}, 56, 64, 'rsp', 'rip', 'rbp'),
    'aarch64': (dict([('x%d' % (19 + i), 16 + 8 * i) for i in range(10)] +
                     [('x29', 96), ('x30', 104)]), 104, 176, 'sp', 'pc',
                'x29'),
}


def _read_word(addr):
    mem = gdb.selected_inferior().read_memory(addr, 8)
    return int.from_bytes(bytes(mem), 'little')


def _string(v, n=32):
    """A C string of at most n bytes: v is a char pointer or array."""
    try:
        addr = int(v.address) if v.type.code == gdb.TYPE_CODE_ARRAY else int(v)
        raw = bytes(gdb.selected_inferior().read_memory(addr, n))
    except (gdb.error, gdb.MemoryError):
        return '?'
    return raw.split(b'\0')[0].decode('utf-8', 'replace')


class Task(object):
    """One live task record, read once."""

    def __init__(self, rec):
        self.rec = rec
        self.addr = int(rec.address)
        co = rec['co']
        self.id = int(co['id'])
        self.name = _string(co['name'])
        self.lifecycle = int(rec['done']['state']) & _LIFECYCLE
        self.started = bool(rec['started'])
        self.pool = int(rec['pool'])
        self.wait = rec['cur_wait'] if int(rec['cur_wait']) else None
        self.sp = int(co['sp'])

    def pool_name(self):
        if not self.pool:
            return '-'
        return _string(self.rec['pool']['name'], 16)

    def worker(self):
        w = self.rec['ran_on']
        if not int(w) or self.wait is None:
            return '-'
        try:
            return str(int(w['index']))
        except gdb.error:
            return '?'

    def host(self, tasks):
        """The task whose stack holds this one's wait (itself, or the task
        it runs inline on)."""
        if self.wait is None:
            return self
        at = int(self.wait['task'])
        return tasks.get_addr(at) or self

    def state(self, tasks):
        if self.wait is not None and self.host(tasks).lifecycle == 0:
            kind = self.wait['kind']
            return _string(kind['name']) if int(kind) else 'wait'
        if self.lifecycle == 0:
            return 'parked'
        return _LIFECYCLES[self.lifecycle]

    def about(self, tasks):
        """What the task waits on, as the dump says it."""
        if self.wait is None:
            return ''
        w = self.wait
        kind = w['kind']
        reason = int(kind['reason']) if int(kind) else 0
        obj = int(w['obj'].cast(gdb.lookup_type('unsigned long')))
        if reason == _constant('WEFT__WR_MUTEX', 1):
            try:
                owner = int(w['obj'].cast(
                    gdb.lookup_type('struct weft__mutex').pointer())['owner_'])
            except gdb.error:
                return 'mutex 0x%x' % obj
            t = tasks.get_addr(owner)
            who = ('task %d' % t.id if t else
                   'a plain thread' if owner else 'nobody')
            return 'mutex 0x%x, held by %s' % (obj, who)
        if reason == _constant('WEFT__WR_AWAIT', 11):
            # The awaited task's handle (struct weft_task), which the
            # awaiter holds: once the task has ended, the waiter slot's
            # mark has its id (above two tag bits, the ENDED one set);
            # before, its run record, whose address is the handle's run
            # word less three flag bits (sched/task.h).
            try:
                h = w['obj'].cast(gdb.lookup_type('struct weft_task').pointer())
                slot = int(h['waiter'])
                if slot & 2:
                    return 'task %d' % (slot >> 2)
                run = gdb.Value(int(h['run']) & ~7).cast(
                    gdb.lookup_type('struct weft__task').pointer())
                return 'task %d' % int(run['co']['id'])
            except (gdb.error, gdb.MemoryError):
                return 'task at 0x%x' % obj
        if reason in (_constant('WEFT__WR_FD_READ', 9),
                      _constant('WEFT__WR_FD_WRITE', 10)):
            return 'fd %d' % obj
        if reason == _constant('WEFT__WR_BLOCKING', 12):
            block = gdb.block_for_pc(obj)
            while block is not None and block.function is None:
                block = block.superblock
            return 'running %s' % (block.function if block else '0x%x' % obj)
        if reason == _constant('WEFT__WR_SLEEP', 8):
            return 'until %.3f s (CLOCK_MONOTONIC)' % (int(w['deadline']) / 1e9)
        if reason in (_constant('WEFT__WR_CHAN_SEND', 5),
                      _constant('WEFT__WR_CHAN_RECV', 6)):
            try:
                cap = int(w['obj'].cast(
                    gdb.lookup_type('struct weft_chan').pointer())['cap'])
                return 'chan 0x%x (capacity %d)' % (obj, cap)
            except gdb.error:
                return 'chan 0x%x' % obj
        nouns = {_constant('WEFT__WR_COND', 2): 'cond',
                 _constant('WEFT__WR_SEM', 3): 'sem',
                 _constant('WEFT__WR_WAIT_GROUP', 4): 'wait group',
                 _constant('WEFT__WR_EVENT', 7): 'event'}
        if reason in nouns:
            return '%s 0x%x' % (nouns[reason], obj)
        return '0x%x' % obj if obj else ''


class Tasks(object):
    """Every live task of the inferior, from records.c's chunk list."""

    def __init__(self):
        syms = [s for s in gdb.lookup_static_symbols('chunks')
                if s.symtab and s.symtab.filename.endswith('records.c')]
        if not syms:
            raise gdb.GdbError('weft: no records.c `chunks` here (no weft, '
                               'or no debug information for it)')
        hosted = _constant('WEFT__CORO_HOSTED', _HOSTED)
        per = _constant('weft__records_per_chunk', 64)
        self.all = []
        self.by_addr = {}
        c = syms[0].value()
        seen = 0
        while int(c) and seen < 1 << 20:
            recs = c['records']
            for i in range(per):
                rec = recs[i]
                if int(rec['co']['flags']) & hosted:
                    t = Task(rec)
                    if t.lifecycle == 3 or (t.lifecycle == 0 and
                                            not t.started):
                        continue  # ended, or lazy and never started
                    self.all.append(t)
                    self.by_addr[t.addr] = t
            c = c['next']
            seen += 1
        self.all.sort(key=lambda t: t.id)

    def get_addr(self, addr):
        return self.by_addr.get(addr)

    def find(self, what):
        what = what.strip()
        try:
            n = int(what, 0)
            for t in self.all:
                if t.id == n:
                    return t
        except ValueError:
            pass
        if len(what) > 1 and what[0] == what[-1] and what[0] in '"\'':
            what = what[1:-1]
        for t in self.all:
            if t.name == what:
                return t
        raise gdb.GdbError('weft: no live task %s' % what)


class InfoWeftTasks(gdb.Command):
    """List weft's live tasks: info weft-tasks [POOL]
Each task's id, name, state (running, runnable, or what it waits for),
the object of its wait, and its pool and worker (the worker it parked on)."""

    def __init__(self):
        super(InfoWeftTasks, self).__init__('info weft-tasks',
                                            gdb.COMMAND_STATUS)

    def invoke(self, arg, from_tty):
        tasks = Tasks()
        rows = []
        for t in tasks.all:
            if arg.strip() and t.pool_name() != arg.strip():
                continue
            rows.append((str(t.id), '"%s"' % t.name, t.state(tasks),
                         t.about(tasks), t.pool_name(), t.worker()))
        head = ('Id', 'Name', 'State', 'Waits on', 'Pool', 'Worker')
        width = [max([len(head[i])] + [len(r[i]) for r in rows])
                 for i in range(6)]
        fmt = '  '.join('%%-%ds' % w for w in width)
        print((fmt % head).rstrip())
        for r in rows:
            print((fmt % r).rstrip())
        print('%d live tasks' % len(rows))


def _saved_registers(task):
    """The registers a parked task's switch saved: name -> value."""
    offsets, ret, size, sp, pc, fp = _FRAMES[_arch()]
    try:
        regs = dict((name, _read_word(task.sp + off))
                    for name, off in offsets.items())
        regs[pc] = _read_word(task.sp + ret)
    except gdb.MemoryError:
        raise gdb.GdbError('weft: task %d: its saved context at 0x%x cannot '
                           'be read' % (task.id, task.sp))
    if not regs[pc]:
        # gdb's gcore cannot read a stack mapping with MADV_GUARD_INSTALL
        # guard pages (Linux 6.13 and later) and writes zeros instead.
        raise gdb.GdbError('weft: task %d: its saved context reads as zeros '
                           '(a gcore of stacks with guard regions? see '
                           'docs/debugging.md, "Core files")' % task.id)
    regs[sp] = task.sp + size
    return regs


def _parked_host(arg):
    """The task for arg and the task whose saved context holds its stack."""
    tasks = Tasks()
    t = tasks.find(arg)
    h = t.host(tasks)
    if h.lifecycle != 0 or not h.started or not h.sp:
        raise gdb.GdbError('weft: task %d is %s: only a parked task has a '
                           'saved context (a running one is on a thread: '
                           '`info threads`, `thread N`, `bt`)'
                           % (t.id, t.state(tasks)))
    return t, h


class _Frame(object):
    def __init__(self, sp, pc):
        self.sp = sp
        self.pc = pc


if Unwinder is not None:
    class TaskUnwinder(Unwinder):
        """While `regs` is set: the selected thread's innermost frame
        returns into a parked task's saved context."""

        def __init__(self):
            super(TaskUnwinder, self).__init__('weft-task')
            self.regs = None

        def __call__(self, pending):
            if self.regs is None:
                return None
            _, _, _, sp, pc, _ = _FRAMES[_arch()]
            cur_sp = pending.read_register(sp)
            cur_pc = pending.read_register(pc)
            # The first frame gdb asks about after use() is the thread's
            # innermost normal frame (an inline frame, as libc's write
            # often is, is unwound by gdb's inline unwinder): claim that
            # one, and only it.
            if self.seen is not None and self.seen != (int(cur_sp),
                                                       int(cur_pc)):
                return None
            self.seen = (int(cur_sp), int(cur_pc))
            # The frame's id: its own pc, and for its stack address one
            # just below the task's saved frame, not the thread's own sp.
            # gdb stops a backtrace whose frames do not grow towards
            # higher addresses ("previous frame inner to this frame"), and
            # a task's stack is anywhere: below the thread's stack, often.
            info = pending.create_unwind_info(
                _Frame(gdb.Value(self.inner).cast(cur_sp.type), cur_pc))
            for name, value in self.regs.items():
                t = pending.read_register(name).type
                info.add_saved_register(name, gdb.Value(value).cast(t))
            return info

        def use(self, regs, inner=0):
            self.regs = regs
            self.inner = inner
            self.seen = None
            gdb.invalidate_cached_frames()

    _unwinder = TaskUnwinder()
    register_unwinder(None, _unwinder, replace=True)
else:
    _unwinder = None


def _describe(frame):
    name = frame.name() or '??'
    sal = frame.find_sal()
    where = ''
    if sal.symtab:
        where = ' at %s:%d' % (sal.symtab.filename, sal.line)
    else:
        so = gdb.solib_name(frame.pc())
        if so:
            where = ' from %s' % so
    return '0x%016x in %s%s' % (frame.pc(), name, where)


def _fp_backtrace(task, limit):
    """The frame-pointer walk, as the dump does it."""
    offsets, ret, size, sp, pc, fp = _FRAMES[_arch()]
    out = [_read_word(task.sp + ret)]
    frame = _read_word(task.sp + offsets[fp])
    floor = task.sp + size
    while floor <= frame < 1 << 64 and len(out) < limit:
        try:
            nxt, r = _read_word(frame), _read_word(frame + 8)
        except gdb.MemoryError:
            break
        if not r:
            break
        out.append(r)
        floor = frame + 16
        frame = nxt
    return out


def _task_frames(task, limit):
    """With the unwinder on task's saved context: the task's frames,
    innermost first (those older than the selected thread's innermost
    normal frame, whose caller is the task's saved context)."""
    regs = _saved_registers(task)
    _unwinder.use(regs, task.sp)
    pc = regs[_FRAMES[_arch()][4]]
    f = gdb.newest_frame()
    # Past the thread's own frames (an inline one and its function's).
    for _ in range(8):
        if f is None or f.pc() == pc:
            break
        f = f.older()
    out = []
    while f is not None and len(out) < limit:
        out.append(f)
        f = f.older()
    return out


class WeftBt(gdb.Command):
    """Backtrace of a parked weft task: weft-bt TASK [--fp] [LIMIT]
TASK is the task's id or its name (info weft-tasks lists them).  gdb
unwinds from the registers the task's switch saved, with the debug
information; --fp walks the frame pointers instead, as weft's own dump
does."""

    def __init__(self):
        super(WeftBt, self).__init__('weft-bt', gdb.COMMAND_STACK)

    def invoke(self, arg, from_tty):
        words = gdb.string_to_argv(arg)
        fp = '--fp' in words
        words = [w for w in words if w != '--fp']
        limit = 64
        if len(words) == 2 and words[1].isdigit():
            limit = int(words.pop())
        if len(words) != 1:
            raise gdb.GdbError('usage: weft-bt TASK [--fp] [LIMIT]')
        t, h = _parked_host(words[0])
        print('task %d "%s"%s:' % (t.id, t.name, '' if h is t else
                                    ' (inline on the stack of task %d)' % h.id))
        if fp or _unwinder is None:
            _saved_registers(h)  # the same checks
            for i, pc in enumerate(_fp_backtrace(h, limit)):
                block = gdb.block_for_pc(pc - 1)
                while block is not None and block.function is None:
                    block = block.superblock
                fn = block.function if block else None
                sal = gdb.find_pc_line(pc - 1)
                where = (' at %s:%d' % (sal.symtab.filename, sal.line)
                         if sal.symtab else '')
                print('#%-2d 0x%016x in %s%s' % (i, pc, fn or '??', where))
            return
        try:
            for i, f in enumerate(_task_frames(h, limit)):
                print('#%-2d %s' % (i, _describe(f)))
        finally:
            _unwinder.use(None)


class WeftFrame(gdb.Command):
    """Select a frame of a parked weft task: weft-frame TASK [N] | off
Frame N (default 0) of `weft-bt TASK` becomes gdb's selected frame, so that
info locals, print, up and down work in it (gdb numbers frames from the
selected thread's own innermost one, which returns into the task here).
`weft-frame off`, or resuming the program, goes back to the threads' own
stacks."""

    def __init__(self):
        super(WeftFrame, self).__init__('weft-frame', gdb.COMMAND_STACK)

    def invoke(self, arg, from_tty):
        if _unwinder is None:
            raise gdb.GdbError('weft-frame needs gdb with Python unwinders')
        words = gdb.string_to_argv(arg)
        if words == ['off']:
            _unwinder.use(None)
            return
        if len(words) not in (1, 2):
            raise gdb.GdbError('usage: weft-frame TASK [N] | off')
        n = int(words[1]) if len(words) == 2 else 0
        t, h = _parked_host(words[0])
        frames = _task_frames(h, n + 1)
        if len(frames) <= n:
            _unwinder.use(None)
            raise gdb.GdbError('weft: task %d has %d frames' %
                               (t.id, len(frames)))
        frames[n].select()
        gdb.execute('frame', from_tty)


def _resumed(event):
    if _unwinder is not None and _unwinder.regs is not None:
        _unwinder.use(None)


gdb.events.cont.connect(_resumed)
InfoWeftTasks()
WeftBt()
WeftFrame()
