%% @doc Waiting for a condition with a deadline instead of sleeping.
%%
%% A fixed sleep is either too short (a flaky test) or too long (a slow
%% one).  Poll the condition instead, and give up at a deadline:
%%
%% ```
%% ok = shardnode_poll:until(fun() -> net_adm:ping(Node) =:= pong end, 5000).
%% '''
%%
%% From Elixir:
%%
%% ```
%% :ok = :shardnode_poll.until(fn -> Node.ping(node) == :pong end, 5000)
%% '''
-module(shardnode_poll).

-export([until/2, until/3, value/2, value/3]).

-define(DEFAULT_INTERVAL, 50).

%% @equiv until(Fun, TimeoutMs, 50)
-spec until(fun(() -> boolean()), non_neg_integer()) -> ok | timeout.
until(Fun, TimeoutMs) ->
    until(Fun, TimeoutMs, ?DEFAULT_INTERVAL).

%% @doc Calls `Fun' every `IntervalMs' milliseconds until it returns `true'
%% (then `ok') or until `TimeoutMs' milliseconds have passed (then
%% `timeout').  `Fun' is always called at least once, and once more at the
%% deadline, so a condition that becomes true during the last interval is
%% not missed.
-spec until(fun(() -> boolean()), non_neg_integer(), pos_integer()) -> ok | timeout.
until(Fun, TimeoutMs, IntervalMs) ->
    Probe = fun() ->
                    case Fun() of
                        true -> {ok, true};
                        false -> retry
                    end
            end,
    case value(Probe, TimeoutMs, IntervalMs) of
        {ok, true} -> ok;
        timeout -> timeout
    end.

%% @equiv value(Fun, TimeoutMs, 50)
-spec value(fun(() -> {ok, Value} | term()), non_neg_integer()) -> {ok, Value} | timeout.
value(Fun, TimeoutMs) ->
    value(Fun, TimeoutMs, ?DEFAULT_INTERVAL).

%% @doc Like {@link until/3}, for conditions that carry a value: calls `Fun'
%% until it returns `{ok, Value}', and returns that; anything else means
%% "not yet".  Returns `timeout' at the deadline.
-spec value(fun(() -> {ok, Value} | term()), non_neg_integer(), pos_integer()) ->
          {ok, Value} | timeout.
value(Fun, TimeoutMs, IntervalMs)
  when is_function(Fun, 0), is_integer(TimeoutMs), TimeoutMs >= 0,
       is_integer(IntervalMs), IntervalMs > 0 ->
    Deadline = erlang:monotonic_time(millisecond) + TimeoutMs,
    loop(Fun, Deadline, IntervalMs).

loop(Fun, Deadline, IntervalMs) ->
    case Fun() of
        {ok, _} = Done ->
            Done;
        _ ->
            Left = Deadline - erlang:monotonic_time(millisecond),
            if
                Left =< 0 ->
                    timeout;
                true ->
                    receive after min(IntervalMs, Left) -> ok end,
                    loop(Fun, Deadline, IntervalMs)
            end
    end.
