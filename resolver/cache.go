package resolver

import (
	"bytes"
	"container/list"
	"sync"
)

// cache is a least-recently-used cache of payloads bounded by their total bytes.
// A nil cache holds nothing. It keeps its own copy of each value and hands out
// copies, so a caller that changes a result cannot change the next one.
type cache struct {
	mu    sync.Mutex
	limit int64
	size  int64
	order *list.List // front: most recently used
	items map[string]*list.Element
}

type entry struct {
	key   string
	value []byte
}

func newCache(limit int64) *cache {
	return &cache{limit: limit, order: list.New(), items: map[string]*list.Element{}}
}

func (c *cache) get(key string) ([]byte, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return bytes.Clone(e.Value.(*entry).value), true
}

func (c *cache) put(key string, value []byte) {
	if c == nil || int64(len(value)) > c.limit {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[key]; ok {
		return
	}
	c.items[key] = c.order.PushFront(&entry{key: key, value: bytes.Clone(value)})
	c.size += int64(len(value))
	for c.size > c.limit {
		last := c.order.Back()
		e := last.Value.(*entry)
		c.order.Remove(last)
		delete(c.items, e.key)
		c.size -= int64(len(e.value))
	}
}
