"""Run the library's tests (unit and end-to-end) and print one line per test as
scripts/run-tests.sh counts them: "ok - NAME", "not ok - NAME: why", "skip - NAME: why"."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


class TapResult(unittest.TestResult):
    def _name(self, test):
        return "python: %s" % test.id().replace("tests.", "", 1)

    def addSuccess(self, test):
        print("ok - %s" % self._name(test), flush=True)

    def _bad(self, test, err):
        lines = self._exc_info_to_string(err, test).strip().splitlines()
        print("not ok - %s: %s" % (self._name(test), " | ".join(lines[-6:])[:900]), flush=True)
        self.failures.append((test, ""))

    addFailure = addError = _bad

    def addSkip(self, test, reason):
        print("skip - %s: %s" % (self._name(test), reason), flush=True)

    def addUnexpectedSuccess(self, test):
        self._bad(test, (AssertionError, AssertionError("unexpected success"), None))


def main():
    sys.path.insert(0, os.path.dirname(HERE))
    suite = unittest.defaultTestLoader.discover(HERE, pattern=sys.argv[1] if len(sys.argv) > 1 else "test_*.py",
                                                top_level_dir=os.path.dirname(HERE))
    r = TapResult()
    suite.run(r)
    return 1 if r.failures else 0


if __name__ == "__main__":
    sys.exit(main())
