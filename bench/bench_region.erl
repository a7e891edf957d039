%% The BEAM baseline's region: what an Erlang team writes for "one process
%% per entity" without a sharding library. One gen_server per entity type,
%% registered under the type's name, keeps EntityId => Pid in a map and
%% starts an entity (a gen_server, bench_entity) on its first message,
%% linked to the region.
%%
%%   ask:  gen_server:call({Type, Node}, {EntityId, Msg})
%%         the region forwards the call with the caller's From; the entity
%%         answers the caller directly (gen:reply/2).
%%   batch: {Type, Node} ! {'$shardnode_calls', Client, [{Tag, Id, Msg}]}
%%         shardnode:call/5's many calls in one message (bench_client):
%%         each handled as the call {Id, Msg} from {Client, Tag}.
%%   tell: {Type, Node} ! {EntityId, Msg, ReplyTo}
%%         the entity sends {Type, EntityId, Reply} to ReplyTo. A BEAM
%%         process cannot see who sent it a message, so the reply-to pid
%%         travels in the message (the C node reads it from the
%%         distribution header instead).
-module(bench_region).
-behaviour(gen_server).

-export([start/1, entity_count/1]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2]).

%% Started unlinked: it outlives the rpc process that starts it.
-spec start(atom()) -> {ok, pid()}.
start(Type) ->
    gen_server:start({local, Type}, ?MODULE, Type, []).

-spec entity_count(atom()) -> non_neg_integer().
entity_count(Type) ->
    gen_server:call(Type, '$entity_count').

init(Type) ->
    {ok, {Type, #{}}}.

handle_call('$entity_count', _From, {_Type, Entities} = S) ->
    {reply, map_size(Entities), S};
handle_call({Id, Msg}, From, S0) ->
    {Pid, S} = entity(Id, S0),
    gen_server:cast(Pid, {call, From, Msg}),
    {noreply, S};
handle_call(Req, _From, S) ->
    {reply, {error, {bad_request, Req}}, S}.

handle_cast(_Msg, S) ->
    {noreply, S}.

handle_info({'$shardnode_calls', Client, Requests}, S0) ->
    %% shardnode:call/5's batch (bench_client): each request is the call
    %% {Id, Msg} from {Client, Tag}, answered on its own by its entity
    S = lists:foldl(fun({Tag, Id, Msg}, Acc0) ->
                            {Pid, Acc} = entity(Id, Acc0),
                            gen_server:cast(Pid, {call, {Client, Tag}, Msg}),
                            Acc
                    end, S0, Requests),
    {noreply, S};
handle_info({Id, Msg, ReplyTo}, S0) when is_pid(ReplyTo) ->
    {Pid, S} = entity(Id, S0),
    gen_server:cast(Pid, {tell, ReplyTo, Msg}),
    {noreply, S};
handle_info(_Other, S) ->
    {noreply, S}.

entity(Id, {Type, Entities} = S) ->
    case Entities of
        #{Id := Pid} ->
            {Pid, S};
        #{} ->
            Pid = bench_entity:start_link(Type, Id),
            {Pid, {Type, Entities#{Id => Pid}}}
    end.
