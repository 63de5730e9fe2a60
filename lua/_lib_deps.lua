-- _lib_deps.lua: job dependencies (EnqueueRequest.depends_on;
-- docs/semantics.md, "Dependencies"; docs/redis-layout.md, "Dependencies"),
-- for enqueue.lua and the scripts that end jobs (ack.lua, settle_failure in
-- _lib_settle.lua, cancel.lua, delete_job.lua). The broker puts it after
-- _lib.lua, whose helpers it uses (broker/store/script_runner.h). It touches
-- no key by itself. No shebang.
--
-- A child names parents of its own queue partition (one Redis slot). While
-- a parent has not ended, the child is pending but not due: it sits in the
-- `deps_waiting` zset (id -> created at) instead of the ready or scheduled
-- set, its record counting the parents left (deps_left), and each such
-- parent lists it in the `dependents` hash (parent id -> child ids, space
-- separated) and carries has_dependents, so that ending a job without
-- dependents costs no command. When a parent completes, its result (if any)
-- is copied into each child's dep_results and deps_left drops; at 0 the
-- child becomes due (ready, or scheduled until its own available_at). When
-- a parent ends dead (or is deleted before it ended), each child ends dead
-- with "dependency failed: <parent id>", and so do the children's own
-- dependents, unless the child was enqueued with run_after_failed_dependency
-- (dep_policy 'run'): the parent then counts as done.
--
-- A parent elsewhere (another queue, or another partition: a ref
-- "<queue>/<id>" in depends_on; docs/semantics.md, "Parents in other
-- queues") lives in another Redis slot, so no script sees both. The child
-- is stored waiting with the ref in deps_remote (counted in deps_left) and
-- in `deps_unlinked`; the broker then links it in the parent's slot
-- (deps_link.lua: the parent lists "<child store queue>,<child id>,<ref>" in
-- `remote_dependents` and carries has_dependents, or answers how it already
-- ended) and confirms the link in the child's slot (deps_resolve.lua). A
-- parent that ends pushes its news ("<child store queue> <child id> <ref>
-- ok|dead <result>") to its slot's `deps_outbox` and publishes 'outbox' on
-- its notify channel; a broker drains the outbox into the children's slots
-- (deps_resolve.lua, which applies each news once: the ref leaves
-- deps_remote). `D` names the keys: jobs, results, ready, by_type,
-- scheduled, dead, deps_waiting, dependents, remote_dependents, outbox
-- (deps_outbox), unlinked (deps_unlinked; enqueue.lua only); D.channel the
-- queue's notify channel; D.fresh (enqueue.lua only) the records of the jobs
-- the running call stored but has not written yet, by id: {job = record,
-- dirty = set when this file changes the record}.

-- Whether a depends_on entry names a parent elsewhere ("<queue>/<id>").
local function is_remote_ref(ref)
  return string.find(ref, '/', 1, true) ~= nil
end

-- What a new job's parents `parents` (ids) are now: `plan` {wait = ids of
-- parents that have not ended, records = {parent id -> record} of those,
-- results = {parent id -> result} of those that completed with one, failed
-- = the first dead parent's id or nil}, or
-- nil and the first id that names no job. A job deleted on ack (its
-- tombstone in `acked`, D.acked_expiry) counts as completed without a
-- result; a completed job whose record was trimmed names no job.
local function deps_plan(D, parents, now)
  local plan = {wait = {}, records = {}, results = {}}
  for _, pid in ipairs(parents) do
    local fresh = D.fresh and D.fresh[pid]
    local parent = fresh and fresh.job or job_read(D.jobs, pid)
    local state = parent and parent[F.state]
    if not parent then
      if not idem_get(D.acked, D.acked_expiry, pid, now) then return nil, pid end
    elseif state == 'completed' then
      local result = redis.call('HGET', D.results, pid)
      if result and result ~= '' then plan.results[pid] = result end
    elseif state == 'dead' then
      plan.failed = plan.failed or pid
    else
      plan.wait[#plan.wait + 1] = pid
      plan.records[pid] = parent
    end
  end
  return plan
end

-- Child `job`'s dep_results with parent `pid`'s `result` added (a parent
-- that completed after the child was enqueued).
local function dep_result_add(job, pid, result)
  local results = {}
  if type(job[F.dep_results]) == 'string' then
    local ok, old = pcall(cmsgpack.unpack, job[F.dep_results])
    if ok and type(old) == 'table' then results = old end
  end
  results[pid] = result
  job[F.dep_results] = cmsgpack.pack(results)
end

-- New job `id` (record `job`, pending, not written yet) depends on
-- `given` (its depends_on as given, batch positions resolved to ids): the
-- parents of its slot as `plan` (deps_plan's) says, and the refs `remote`
-- to parents elsewhere; `run_after_failed` is its policy. Fills the record's
-- dependency fields and registers the job with the parents of its slot it
-- waits for; a job with remote refs waits for each and goes into
-- D.unlinked until the broker confirms its links. Returns 'due' (every
-- parent done: the caller makes it ready or scheduled), 'wait' (the caller
-- adds it to deps_waiting) or 'failed' (a parent is dead: the record is
-- made dead, and the caller adds it to the dead set).
local function deps_register(D, job, id, given, plan, remote, run_after_failed, now)
  job[F.depends_on] = table.concat(given, ' ')
  if run_after_failed then job[F.dep_policy] = 'run' end
  if next(plan.results) then job[F.dep_results] = cmsgpack.pack(plan.results) end
  if plan.failed and not run_after_failed then
    job[F.state], job[F.finished_at], job[F.deps_left] = 'dead', now, 0
    error_note(job, 0, 'dependency failed: ' .. plan.failed, now)
    return 'failed'
  end
  job[F.deps_left] = #plan.wait + #remote
  if #remote > 0 then
    job[F.deps_remote] = table.concat(remote, ' ')
    redis.call('ZADD', D.unlinked, int(now), id)
  end
  for _, pid in ipairs(plan.wait) do
    local list = redis.call('HGET', D.dependents, pid)
    redis.call('HSET', D.dependents, pid, list and (list .. ' ' .. id) or id)
    local parent = plan.records[pid]
    if not parent[F.has_dependents] then
      parent[F.has_dependents] = 1
      local fresh = D.fresh and D.fresh[pid]
      if fresh then fresh.dirty = true else job_write(D.jobs, pid, parent) end
    end
  end
  if job[F.deps_left] > 0 then return 'wait' end
  return 'due'
end

-- Pending job `id` (record `job`, deps_left 0) becomes due: ready when its
-- available_at has come, else scheduled. Returns the delay until it is
-- due (0: ready now).
local function deps_make_due(D, job, id, now)
  local available_at = tonumber(job[F.available_at]) or now
  if available_at <= now then
    ready_add(D, job, ready_score(tonumber(job[F.priority]) or 0, available_at), id)
    return 0
  end
  redis.call('ZADD', D.scheduled, int(available_at), id)
  return available_at - now
end

-- Waiting child `cid` (record `child`) learns that its parent `pid` ended:
-- completed with `presult` when `pok`, else dead (or deleted, or not found:
-- `why`, when given, is the error's text after "dependency failed: ").
-- Writes the child: one parent fewer (due at the last: deps_make_due), or
-- dead unless its policy runs it anyway. Returns the delay until it is due
-- when it became due, and true as a second value when it ended dead (the
-- caller then settles its own dependents).
local function deps_child_learns(D, cid, child, pid, pok, presult, now, why)
  if pok or child[F.dep_policy] == 'run' then
    if pok and presult and presult ~= '' then dep_result_add(child, pid, presult) end
    child[F.deps_left] = math.max(0, (tonumber(child[F.deps_left]) or 1) - 1)
    local delay = nil
    if child[F.deps_left] == 0 then
      redis.call('ZREM', D.deps_waiting, cid)
      delay = deps_make_due(D, child, cid, now)
    end
    job_write(D.jobs, cid, child)
    return delay, false
  end
  redis.call('ZREM', D.deps_waiting, cid)
  child[F.state], child[F.finished_at], child[F.deps_left] = 'dead', now, 0
  error_note(child, 0, 'dependency failed: ' .. (why or pid), now)
  job_write(D.jobs, cid, child)
  redis.call('ZADD', D.dead, int(now), cid)
  event('dead', cid, child, now)
  return nil, true
end

-- Parent `pid` ended (completed with `presult` when `pok`): its dependents
-- in other slots get the news through D.outbox (D.outboxed is then set).
local function deps_tell_remote(D, pid, pok, presult)
  local list = redis.call('HGET', D.remote_dependents, pid)
  if not list then return end
  redis.call('HDEL', D.remote_dependents, pid)
  local news = {}
  for entry in string.gmatch(list, '%S+') do
    local queue, cid, ref = string.match(entry, '^([^,]+),([^,]+),(.+)$')
    if queue then
      news[#news + 1] = table.concat({queue, cid, ref, pok and 'ok' or 'dead',
                                      pok and presult or ''}, ' ')
    end
  end
  if #news > 0 then
    call_pairs('RPUSH', D.outbox, news)  -- any list: chunks of 2000
    D.outboxed = true
  end
end

-- Job `id` (record `job` before it ended, or was deleted) ended: completed
-- with `result` when `ok`, else dead or deleted. Settles its waiting
-- dependents as the header says, and theirs in turn when they fail;
-- publishes on D.channel when one became due, and 'outbox' when news for
-- dependents elsewhere was pushed. Does nothing (no command) for a job
-- without dependents.
local function deps_parent_ended(D, id, job, ok, result, now)
  if not (job and job[F.has_dependents]) then return end
  local work = {{id, ok, result}}
  local next_delay = nil
  while #work > 0 do
    local pid, pok, presult = unpack(table.remove(work))
    local list = redis.call('HGET', D.dependents, pid)
    if list then redis.call('HDEL', D.dependents, pid) end
    for cid in string.gmatch(list or '', '%S+') do
      local child = redis.call('ZSCORE', D.deps_waiting, cid) and job_read(D.jobs, cid)
      if child then
        local delay, dead = deps_child_learns(D, cid, child, pid, pok, presult, now)
        if delay and (not next_delay or delay < next_delay) then next_delay = delay end
        if dead and child[F.has_dependents] then work[#work + 1] = {cid, false} end
      end
    end
    deps_tell_remote(D, pid, pok, presult)
  end
  if next_delay then redis.call('SPUBLISH', D.channel, int(next_delay)) end
  if D.outboxed then redis.call('SPUBLISH', D.channel, 'outbox') end
  D.outboxed = false
end
