package proxmox

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// TaskFault scripts how matching tasks end: with warnings (the task still
// takes effect), with an error (it does not), or never (it hangs in
// "running" until the caller gives up).
type TaskFault struct {
	// Type is the task type ("qmcreate", "qmstart", "qmstop", "qmshutdown",
	// "qmreboot", "qmdestroy", "qmconfig", "resize", "imgcopy", "imgdel",
	// "download", "reloadnetworkall"); "" matches any.
	Type string
	// ID is the task id (the VMID for qm* tasks, the file name for
	// downloads); "" matches any.
	ID string
	// Nth fails only the Nth matching task (1-based); 0 fails every one.
	Nth int
	// ExitStatus is how the task ends: "WARNINGS: N" (success with
	// warnings) or an error message; "" means "simulated failure".
	ExitStatus string
	// Log lines added before the final line (e.g. "WARN: ...").
	Log []string
	// Hang leaves the task running forever.
	Hang bool

	seen int
}

// FailTasks adds scripted task outcomes; the first matching one applies.
func (s *Server) FailTasks(faults ...TaskFault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range faults {
		f := faults[i]
		s.taskFaults = append(s.taskFaults, &f)
	}
}

// ClearTaskFaults forgets every scripted task outcome.
func (s *Server) ClearTaskFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.taskFaults = nil
}

// SetTaskDuration sets how long tasks of type typ run ("" sets the default).
func (s *Server) SetTaskDuration(typ string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if typ == "" {
		s.opts.TaskDuration = d
		return
	}
	if s.opts.TaskDurations == nil {
		s.opts.TaskDurations = map[string]time.Duration{}
	}
	s.opts.TaskDurations[typ] = d
}

// task is one worker task.
type task struct {
	upid, node, typ, id, user string
	pid, pstart               int
	start, end                time.Time
	running                   bool
	exit                      string
	log                       []string
}

// taskSpec describes a task to start: fetch (optional) runs without the
// lock once the task's time has passed; finish then runs with the lock and
// applies the task's effect, or fails it.
type taskSpec struct {
	node, typ, id string
	user          string
	log           []string
	fetch         func() ([]string, error)
	finish        func() ([]string, error)
	// abort undoes what starting the task did when it fails before finish.
	abort func()
}

// startTask creates a running task and schedules its end. The caller holds
// s.mu; the returned UPID is the API's answer.
func (s *Server) startTask(sp taskSpec) string {
	s.pidSeq += 1 + s.rng.IntN(7)
	now := time.Now()
	t := &task{
		node: sp.node, typ: sp.typ, id: sp.id, user: sp.user,
		pid: s.pidSeq, pstart: s.nodes[sp.node].pstart, start: now, running: true,
		log: slices.Clone(sp.log),
	}
	t.upid = fmt.Sprintf("UPID:%s:%08X:%08X:%08X:%s:%s:%s:", t.node, t.pid, t.pstart, now.Unix(), t.typ, t.id, t.user)
	s.tasks[t.upid] = t
	s.taskList = append(s.taskList, t)
	fault := s.matchTaskFault(t)
	if fault != nil && fault.Hang {
		return t.upid
	}
	d, ok := s.opts.TaskDurations[t.typ]
	if !ok {
		d = s.opts.TaskDuration
	}
	if d <= 0 && sp.fetch == nil {
		// A zero duration finishes the task before the API call returns.
		s.finishTask(t, sp, fault, nil, nil)
		return t.upid
	}
	s.after(d, func() { s.endTask(t, sp, fault) })
	return t.upid
}

func (s *Server) matchTaskFault(t *task) *TaskFault {
	for _, f := range s.taskFaults {
		if (f.Type != "" && f.Type != t.typ) || (f.ID != "" && f.ID != t.id) {
			continue
		}
		f.seen++
		if f.Nth == 0 || f.seen == f.Nth {
			return f
		}
	}
	return nil
}

// endTask runs a task's fetch (without the lock), then finishes it.
func (s *Server) endTask(t *task, sp taskSpec, fault *TaskFault) {
	var lines []string
	var err error
	if sp.fetch != nil && !faultFails(fault) {
		lines, err = sp.fetch()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || !t.running {
		return
	}
	s.finishTask(t, sp, fault, lines, err)
}

func faultFails(f *TaskFault) bool {
	return f != nil && !strings.HasPrefix(f.ExitStatus, "WARNINGS:")
}

// finishTask applies the task's effect (or its failure) and stops it.
// The caller holds s.mu.
func (s *Server) finishTask(t *task, sp taskSpec, fault *TaskFault, lines []string, err error) {
	exit := "OK"
	switch {
	case faultFails(fault):
		exit = cmp.Or(fault.ExitStatus, "simulated failure")
	case err != nil:
		exit = err.Error()
	}
	if exit != "OK" && sp.abort != nil {
		sp.abort()
	}
	if exit == "OK" && sp.finish != nil {
		var more []string
		more, err = sp.finish()
		lines = append(lines, more...)
		if err != nil {
			exit = err.Error()
		}
	}
	t.log = append(t.log, lines...)
	if fault != nil {
		t.log = append(t.log, fault.Log...)
		if exit == "OK" {
			exit = fault.ExitStatus
		}
	}
	s.stopTask(t, exit)
}

// stopTask ends t with exit. The caller holds s.mu.
func (s *Server) stopTask(t *task, exit string) {
	t.running, t.exit, t.end = false, exit, time.Now()
	switch {
	case exit == "OK":
		t.log = append(t.log, "TASK OK")
	case strings.HasPrefix(exit, "WARNINGS:"):
		t.log = append(t.log, "TASK "+exit)
	default:
		t.log = append(t.log, "TASK ERROR: "+exit)
	}
}

func (s *Server) taskRoutes(rt *router) {
	rt.handle("GET", "/nodes/{node}/tasks", s.listTasks)
	rt.handle("GET", "/nodes/{node}/tasks/{upid}/status", s.taskStatus)
	rt.handle("GET", "/nodes/{node}/tasks/{upid}/log", s.taskLog)
	rt.handle("DELETE", "/nodes/{node}/tasks/{upid}", s.stopTaskAPI)
}

// lookupTask finds the task in the path; reading another user's task
// needs Sys.Audit on the node. The caller holds s.mu.
func (c *call) lookupTask() (*task, error) {
	t := c.s.tasks[c.path["upid"]]
	if t == nil || t.node != c.path["node"] {
		return nil, paramErr1("upid", "no such task")
	}
	if t.user != c.tok.id && !c.hasLocked("/nodes/"+t.node, "Sys.Audit") {
		return nil, forbidden("/nodes/"+t.node, "Sys.Audit")
	}
	return t, nil
}

func (t *task) status(full bool) map[string]any {
	user, tokenID, _ := strings.Cut(t.user, "!")
	m := map[string]any{
		"upid": t.upid, "node": t.node, "pid": t.pid, "pstart": t.pstart,
		"starttime": t.start.Unix(), "type": t.typ, "id": t.id, "user": user,
	}
	if tokenID != "" {
		m["tokenid"] = tokenID
	}
	if full {
		m["status"] = map[bool]string{true: "running", false: "stopped"}[t.running]
		if !t.running {
			m["exitstatus"] = t.exit
		}
		return m
	}
	// The task index carries the exit status in "status" once finished.
	if !t.running {
		m["status"] = t.exit
		m["endtime"] = t.end.Unix()
	}
	return m
}

func (s *Server) taskStatus(c *call) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := c.lookupTask()
	if err != nil {
		return nil, err
	}
	return t.status(true), nil
}

func (s *Server) taskLog(c *call) (any, error) {
	if err := c.p.check(schema{names: []string{"start", "limit", "download"}}); err != nil {
		return nil, err
	}
	start, err := c.p.integer("start", 0)
	if err != nil {
		return nil, err
	}
	limit, err := c.p.integer("limit", 50)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := c.lookupTask()
	if err != nil {
		return nil, err
	}
	out := []map[string]any{}
	for i := start; i < len(t.log) && len(out) < limit; i++ {
		out = append(out, map[string]any{"n": i + 1, "t": t.log[i]})
	}
	return out, nil
}

func (s *Server) stopTaskAPI(c *call) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := c.lookupTask()
	if err != nil {
		return nil, err
	}
	if t.running {
		s.stopTask(t, "interrupted by signal")
	}
	return nil, nil
}

var taskListSchema = schema{names: []string{"start", "limit", "vmid", "typefilter", "since", "until", "userfilter", "errors", "source", "statusfilter"}}

// listTasks is the node's task index, newest first, with PVE's filters.
func (s *Server) listTasks(c *call) (any, error) {
	if err := c.p.check(taskListSchema); err != nil {
		return nil, err
	}
	start, err := c.p.integer("start", 0)
	if err != nil {
		return nil, err
	}
	limit, err := c.p.integer("limit", 50)
	if err != nil {
		return nil, err
	}
	since, err := c.p.integer("since", 0)
	if err != nil {
		return nil, err
	}
	errorsOnly, err := c.p.boolean("errors", false)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	auditor := c.hasLocked("/nodes/"+c.path["node"], "Sys.Audit")
	var out []map[string]any
	for _, t := range slices.Backward(s.taskList) {
		switch {
		case t.node != c.path["node"], !auditor && t.user != c.tok.id,
			c.p.has("vmid") && t.id != c.p.str("vmid"),
			c.p.has("typefilter") && t.typ != c.p.str("typefilter"),
			t.start.Unix() < int64(since),
			c.p.str("source") == "active" && !t.running,
			(c.p.str("source") == "" || c.p.str("source") == "archive") && t.running,
			errorsOnly && (t.running || t.exit == "OK"):
			continue
		}
		out = append(out, t.status(false))
	}
	if start >= len(out) {
		return []map[string]any{}, nil
	}
	return out[start:min(len(out), start+limit)], nil
}
