package identity

// WriteFileAtomic exposes the atomic writer with its failure-injection hook.
func WriteFileAtomic(path string, data []byte, replace bool, beforeCommit func(tmp string) error) error {
	return writeFileAtomic(path, data, writeOptions{replace: replace, beforeCommit: beforeCommit})
}
