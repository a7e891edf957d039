# The C node talks to this VM over the distribution: run the tests on a
# distributed VM (elixir --name … -S mix test), as the README says.
# capture_log: a failing test shows the log lines it caused, a passing one none.
ExUnit.start(capture_log: true)
