"""The chat engine: the only code that talks to a model. User chat, the plain LLM chat and A2A tasks all
run their turns through it.

Public interface (stable; other domains call only these):

``await run_turn(rt, *, user_id, user_role, agent, session_id, user_text, buffer_key=None,
                 message_extra=None, recursion_depth=0, tool_extra=None) -> TurnResult``
    Run one turn of a session to its end in the *current* task and return. It saves the user message,
    creates the assistant message, streams Vercel AI UI-message-stream chunks (SSE frames) into the
    stream buffer ``buffer_key`` (default: the session id), and on finish / pause / error / stop saves
    the assistant message (text, parts, usage, status) and the model history on the session.
    - ``agent``: an ``agents.models.Agent`` row, or ``None`` for the plain LLM chat (default model,
      the tools ``tools.service.get_enabled_tools_for_llm`` returns for the user).
    - ``message_extra``: extra column values written on BOTH messages of the turn (A2A passes
      ``{"source": "a2a", "a2a_task_id": ..., "caller_agent_id": ..., "caller_session_id": ...}``
      once its migration adds those columns). Unknown keys raise ``TypeError``.
    - ``recursion_depth`` / ``tool_extra`` are handed to every tool in ``ToolContext``.
    - Raises ``errors.Conflict`` (code ``session_busy``) when the session already runs a turn or waits
      for an approval. Never raises for model or tool failures: they end up in the result.
    A caller that wants the run to outlive its request wraps it in ``service.start_turn`` (a background
    task registered so ``stop`` can cancel it); A2A may simply ``await`` it inside its own task.

``TurnResult``: ``status`` (``complete`` | ``failed`` | ``stopped`` | ``awaiting_approval``),
    ``text`` (the assistant's text of this turn), ``message_id`` (assistant message), ``input_tokens`` /
    ``output_tokens`` (summed over every step and every resumed run of the message), ``error`` (readable
    message or None), ``pending`` (tool calls awaiting approval: ``[{toolCallId, toolName, input}]``).

``await resume_turn(rt, *, session_id, user_id, user_role, buffer_key=None, ...) -> TurnResult``
    Continue a session paused on approvals once every pending call is answered (``service`` records
    the answers; the approvals endpoint calls this through ``service.start_resume``).

Buffers (``chat.buffers``): ``get_buffers(rt)`` returns the app's ``StreamBuffers``; keys are plain
strings (a session id, or ``a2a_<taskId>``). ``subscribe(key)`` replays the current run's chunks then
follows live; ``sse_response(...)`` in ``chat.router`` turns a subscription into an HTTP response.

Custom chunks: a tool calls ``await ctx.emit("a2a-task-started", {...})``; the engine appends a
``data-a2a-task-started`` chunk to the caller's buffer at once (while the tool is still running).

The engine never imports a tool type nor ``a2a``; tools come from ``tools.service`` and run through
``tools.runner.run_tool`` (see ``chat.toolset``).
"""
