package svc

import "testing"

// TestZZOpenAPICoverage runs after every other test of the package (file and name order).
func TestZZOpenAPICoverage(t *testing.T) { checkOpenAPICoverage(t) }
