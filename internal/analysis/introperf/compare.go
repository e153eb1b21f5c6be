package introperf

// Comparison is a base and a buggy run and the buggy run's ranked paths,
// what culprit contexts reports (render draws it).
type Comparison struct {
	Base, Buggy         *Result
	BaseName, BuggyName string
	Options             RankOptions
	Paths               []RankedPath // Rank(Base, Buggy, Options)
}
