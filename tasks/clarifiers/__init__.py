"""Clarification methods: each is a small module over the same episode loop (tasks/episodes/loop.py)."""

from tasks.records import MethodReference

BUILTIN: dict[str, str] = {
    # name -> "module:factory"; a factory takes (display_name, options) and returns a Method
    "freeqa": "tasks.clarifiers.freeqa:freeqa",
    "mc": "tasks.clarifiers.choice:mc",
    "mc_d": "tasks.clarifiers.choice:mc_d",
    "readygate": "tasks.clarifiers.readygate:readygate",
    "orpilot": "tasks.clarifiers.orpilot:orpilot",
    "policy": "tasks.clarifiers.policy:policy",
    "oracle": "tasks.clarifiers.reference:oracle",
    "ready_now": "tasks.clarifiers.reference:ready_now",
    "interopt": "tasks.clarifiers.interopt:interopt",
    "interopt_wo_stage1": "tasks.clarifiers.interopt:interopt_wo_stage1",
    "interopt_wo_stage2": "tasks.clarifiers.interopt:interopt_wo_stage2",
    "interopt_aligned": "tasks.clarifiers.interopt:interopt_aligned",
    "interopt_cost_aware": "tasks.clarifiers.interopt:interopt_cost_aware",
}

REFERENCE: dict[str, MethodReference] = {
    # method kind -> why its rows are reference rows (shown apart, never ranked); a kind not listed is ranked
    "oracle": MethodReference(kind="privileged", reads="the hidden slots: asks each slot's reference question "
                              "(under MC / MC-D with the simulator's answer as an option)"),
    "ready_now": MethodReference(kind="bound", reads="nothing: declares READY at turn 1 with the brief as its "
                                 "summary (the floor)"),
}
