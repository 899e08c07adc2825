"""Claude Code hooks: installed into ``settings.json`` by ``settings`` (``atlas hooks
install``), run by ``run`` (``atlas hook NAME``). A hook always exits 0 within its budget and
spends no model tokens; what went wrong goes to stderr (stdout reaches the model)."""
