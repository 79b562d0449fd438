package auth

import "container/list"

// lru is a map of at most n entries that forgets the least recently used
// one first. Not safe for concurrent use.
type lru[K comparable, V any] struct {
	n     int
	order *list.List // front: most recent; values are K
	m     map[K]lruEntry[V]
}

type lruEntry[V any] struct {
	v V
	e *list.Element
}

func newLRU[K comparable, V any](n int) *lru[K, V] {
	return &lru[K, V]{n: max(1, n), order: list.New(), m: map[K]lruEntry[V]{}}
}

func (c *lru[K, V]) get(k K) (V, bool) {
	ent, ok := c.m[k]
	if ok {
		c.order.MoveToFront(ent.e)
	}
	return ent.v, ok
}

func (c *lru[K, V]) put(k K, v V) {
	if ent, ok := c.m[k]; ok {
		ent.v = v
		c.m[k] = ent
		c.order.MoveToFront(ent.e)
		return
	}
	for len(c.m) >= c.n {
		old := c.order.Back()
		delete(c.m, old.Value.(K))
		c.order.Remove(old)
	}
	c.m[k] = lruEntry[V]{v: v, e: c.order.PushFront(k)}
}

func (c *lru[K, V]) remove(k K) {
	if ent, ok := c.m[k]; ok {
		c.order.Remove(ent.e)
		delete(c.m, k)
	}
}
