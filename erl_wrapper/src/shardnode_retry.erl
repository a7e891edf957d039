%% @private
%% @doc {@link shardnode:call/5} with options: a call tried again, until
%% its deadline, when its outcome says it was certainly not handled —
%% and, only for a message its caller marks idempotent, when it may have
%% been.
%%
%% Certainly not handled (docs/contract.md "The Erlang client"):
%% <ul>
%% <li>the request never left this node: no connection to the member
%%     (shardnode_client tells it from a connection lost after sending);</li>
%% <li>`{error, shutting_down}', `{error, store_unavailable}',
%%     `{error, overloaded}': the member answered for the entity without
%%     handling the message;</li>
%% <li>`{error, noproc}' when another member is named: this one hosts no
%%     region of the type (yet).</li>
%% </ul>
%% Maybe handled: `{error, timeout}' (the attempt's), `{error,
%% unconfirmed}', `{error, noconnection}' after the request was sent.
%% These end the call unless the message is idempotent.
%%
%% A call through a member that is gone goes on through the next member
%% named, at once; once every member named has been tried, the next round
%% waits a back-off (?FIRST_BACKOFF_MS, doubling to ?MAX_BACKOFF_MS, cut
%% short by the deadline), and the last attempt gets what time is left.
-module(shardnode_retry).

-export([call/5]).

-define(FIRST_BACKOFF_MS, 20).
-define(MAX_BACKOFF_MS, 500).
-define(DEFAULT_TIMEOUT, 5000).

-record(try_, {nodes :: [node()],        % the members, the one to try first at the head
               type :: atom(),
               id :: term(),
               msg :: term(),
               deadline :: integer() | infinity,
               attempt_ms :: timeout(),
               idempotent :: boolean(),
               tried = 0 :: non_neg_integer(),   % attempts in this round
               backoff = ?FIRST_BACKOFF_MS :: pos_integer()}).

%% @doc The call through `Nodes' (the first first) with options `Opts'
%% (shardnode:call_opts()). Returns the reply, or the last `{error, _}'
%% when the deadline passes or an outcome may not be retried.
-spec call([node()], atom(), term(), term(), map()) -> term().
call(Nodes, Type, Id, Msg, Opts) ->
    Timeout = maps:get(timeout, Opts, ?DEFAULT_TIMEOUT),
    T = #try_{nodes = Nodes, type = Type, id = Id, msg = Msg,
              deadline = deadline(Timeout),
              attempt_ms = maps:get(attempt_timeout, Opts, Timeout),
              idempotent = maps:get(idempotent, Opts, false)},
    attempt(T).

attempt(#try_{nodes = [Node | _], type = Type, id = Id, msg = Msg} = T) ->
    Wait = min_timeout(T#try_.attempt_ms, left(T#try_.deadline)),
    Outcome = shardnode_client:attempt(shardnode_clients:client(Node), Type, Id, Msg, Wait),
    case next_step(Outcome, T) of
        done -> as_reply(Outcome);
        Step -> again(Step, as_reply(Outcome), T)
    end.

%% What an outcome calls for: done, or another attempt through the next
%% member (`next') or the same one (`same').
next_step({unsent, _}, _T) -> next;
next_step({error, shutting_down}, _T) -> next;
next_step({error, store_unavailable}, _T) -> same;
next_step({error, overloaded}, _T) -> same;
next_step({error, noproc}, #try_{nodes = [_, _ | _]}) -> next;
next_step({error, Maybe}, #try_{idempotent = true})
  when Maybe =:= timeout; Maybe =:= unconfirmed; Maybe =:= noconnection -> same;
next_step(_Outcome, _T) -> done.

as_reply({unsent, Why}) -> {error, Why};
as_reply(Reply) -> Reply.

%% Another attempt, if the deadline leaves room for one; else Last.
again(Step, Last, #try_{nodes = Nodes, tried = Tried} = T0) ->
    T = case Step of
            next -> T0#try_{nodes = rotate(Nodes), tried = Tried + 1};
            same -> T0#try_{tried = length(Nodes)}
        end,
    case T#try_.tried >= length(Nodes) of
        false ->
            attempt(T); % the next member, at once
        true ->
            Pause = T#try_.backoff,
            receive after min_timeout(Pause, left(T#try_.deadline)) -> ok end,
            case left(T#try_.deadline) of
                0 -> Last;
                _ -> attempt(T#try_{tried = 0, backoff = min(2 * Pause, ?MAX_BACKOFF_MS)})
            end
    end.

rotate([First | Rest]) -> Rest ++ [First].

deadline(infinity) -> infinity;
deadline(Ms) -> erlang:monotonic_time(millisecond) + Ms.

left(infinity) -> infinity;
left(Deadline) -> max(0, Deadline - erlang:monotonic_time(millisecond)).

min_timeout(infinity, B) -> B;
min_timeout(A, infinity) -> A;
min_timeout(A, B) -> min(A, B).
