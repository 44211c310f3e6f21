package main

import (
	"bytes"
	"encoding/json"
)

// orderedMap is a JSON object that keeps insertion order: outcomes list workloads and
// pod sets in file order, as the oracle does.
type orderedMap[V any] struct {
	keys   []string
	values map[string]V
}

func (m *orderedMap[V]) set(k string, v V) {
	if m.values == nil {
		m.values = map[string]V{}
	}
	if _, ok := m.values[k]; !ok {
		m.keys = append(m.keys, k)
	}
	m.values[k] = v
}

func (m *orderedMap[V]) delete(k string) {
	if _, ok := m.values[k]; !ok {
		return
	}
	delete(m.values, k)
	for i, key := range m.keys {
		if key == k {
			m.keys = append(m.keys[:i:i], m.keys[i+1:]...)
			break
		}
	}
}

// clone copies the map (values are copied shallowly).
func (m *orderedMap[V]) clone() *orderedMap[V] {
	out := &orderedMap[V]{keys: append([]string(nil), m.keys...), values: make(map[string]V, len(m.values))}
	for k, v := range m.values {
		out.values[k] = v
	}
	return out
}

func (m *orderedMap[V]) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range m.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		key, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		val, err := json.Marshal(m.values[k])
		if err != nil {
			return nil, err
		}
		b.Write(key)
		b.WriteByte(':')
		b.Write(val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
