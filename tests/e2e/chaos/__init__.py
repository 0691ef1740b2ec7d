"""The exactly-once chaos harness: a cuttable TCP proxy and the trial driver (issue 14's proof)."""
