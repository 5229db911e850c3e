package settings

// Closest returns the name in known nearest to unknown (a misspelling: at
// most two edits away, the first in sort order on a tie), or "".
func Closest(unknown string, known []string) string {
	if len(unknown) > maxKeyInPath {
		return "" // no known name is that long; spare the edit distance
	}
	best, bestDist := "", 3
	for _, k := range known {
		if dist := editDistance(unknown, k); dist < bestDist || (dist == bestDist && k < best) {
			best, bestDist = k, dist
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
