package mcpclient

import "time"

// attempt is the reconnect policy's next step after a loss or a failed
// attempt: the attempt to make (n, from 1) after waiting wait, or giveUp.
type attempt struct {
	n      int
	wait   time.Duration
	giveUp bool
}

// nextAttempt is the reconnect policy, pure: made is the number of attempts
// made since the count last started; up is how long the connection that was
// just lost had stayed up (0 after a failed attempt). A connection that
// stayed up maxDelayMs starts the count again, so a server that crashes now
// and then never runs out of attempts, and one that crashes soon after every
// start does. Attempt n waits initialDelayMs × 2^(n−1), at most maxDelayMs;
// after maxAttempts, or with reconnecting off, the instance gives up.
func nextAttempt(r Reconnect, made int, up time.Duration) attempt {
	if !r.Enabled {
		return attempt{giveUp: true}
	}
	if up >= r.stable() {
		made = 0
	}
	n := made + 1
	if n > r.MaxAttempts {
		return attempt{n: n, giveUp: true}
	}
	return attempt{n: n, wait: r.delay(n)}
}

// delay is how long attempt n (from 1) waits.
func (r Reconnect) delay(n int) time.Duration {
	d := time.Duration(r.InitialDelayMs) * time.Millisecond
	limit := time.Duration(r.MaxDelayMs) * time.Millisecond
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// stable is how long a connection must stay up to start the count again.
func (r Reconnect) stable() time.Duration { return time.Duration(r.MaxDelayMs) * time.Millisecond }
