package pipeline

import "sync"

// queue holds the jobs waiting for a worker, lane by lane. A worker takes the
// first waiting job of the lane with the fewest jobs on workers (ties go round
// the lanes), so that a lane with a backlog gets no more than its share of the
// workers while other lanes have jobs waiting. Safe from any goroutine.
type queue struct {
	mu      sync.Mutex
	work    sync.Cond // signalled when a job is put or the queue closes
	room    sync.Cond // signalled when a job is taken or the queue closes
	waiting [][]*job  // by lane
	running []int     // jobs taken and not done yet, by lane
	n       int       // jobs waiting in all
	turn    int       // the lane ties start from
	closed  bool
	// moved is signalled when a job is taken or done, for a caller that
	// waits for room or for a result without blocking (Batch.AwaitProgress).
	moved chan struct{}
}

func (q *queue) init() {
	q.work.L, q.room.L = &q.mu, &q.mu
	q.moved = make(chan struct{}, 1)
}

// put adds j to its lane once fewer than limit jobs are waiting. It reports
// false, adding nothing, if the queue closed first.
func (q *queue) put(j *job, limit int) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.n >= limit && !q.closed {
		q.room.Wait()
	}
	if q.closed {
		return false
	}
	for len(q.waiting) <= j.lane {
		q.waiting = append(q.waiting, nil)
		q.running = append(q.running, 0)
	}
	q.waiting[j.lane] = append(q.waiting[j.lane], j)
	q.n++
	q.work.Signal()
	return true
}

// take waits for a job and takes it, counting it as running in its lane
// until done. It returns nil once the queue is closed and empty.
func (q *queue) take() *job {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.n == 0 && !q.closed {
		q.work.Wait()
	}
	if q.n == 0 {
		return nil
	}
	best := -1
	for k := range len(q.waiting) {
		i := (q.turn + k) % len(q.waiting)
		if len(q.waiting[i]) > 0 && (best < 0 || q.running[i] < q.running[best]) {
			best = i
		}
	}
	q.turn = (best + 1) % len(q.waiting)
	j := q.waiting[best][0]
	q.waiting[best][0] = nil
	q.waiting[best] = q.waiting[best][1:]
	q.running[best]++
	q.n--
	q.room.Signal()
	q.signalMoved()
	return j
}

// full reports that limit jobs or more are waiting: put would wait.
func (q *queue) full(limit int) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n >= limit
}

// done counts a job taken as finished.
func (q *queue) done(j *job) {
	q.mu.Lock()
	q.running[j.lane]--
	q.mu.Unlock()
	q.signalMoved()
}

// signalMoved signals moved, unless a signal is already waiting there.
func (q *queue) signalMoved() {
	select {
	case q.moved <- struct{}{}:
	default:
	}
}

// close wakes every worker and the producer: take hands out what is waiting
// and then nil, and put adds nothing more.
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.work.Broadcast()
	q.room.Broadcast()
	q.mu.Unlock()
}
