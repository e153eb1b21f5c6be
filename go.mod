module github.com/culprit-dev/culprit

go 1.26.8
