"""Code objects created and freed in a loop.

usage: exec_loop.py SECONDS [RESULT_JSON]

Each round compiles, with exec, a function named fn_alpha (70% of the time)
or fn_beta (30%), runs it for a few milliseconds, and drops it, so its code
object is freed and the memory is reused by the next one.  Decoy functions
(fn_decoy_N) are compiled and freed too but never run: they must never show
up in a profile.  The two real names have their hot loop on different lines
of their generated source (<gen fn_alpha> line 5, <gen fn_beta> line 7,
the decoys line 9).
Writes JSON with the thread_time spent in each name and the hot lines.
"""
import json
import random
import sys
from time import thread_time

TEMPLATE = """def {name}(budget):
    start = thread_time()
    x = 0
{pad}    while thread_time() - start < budget:
        for i in range(1000): x += i * i
    return x
"""
# hot loop line within the generated source, by name
HOT_LINES = {"fn_alpha": 5, "fn_beta": 7, "fn_decoy": 9}


def make_function(name, kind):
    pad = "\n" * (HOT_LINES[kind] - 5)
    source = TEMPLATE.format(name=name, pad=pad)
    module_code = compile(source, "<gen " + name + ">", "exec")
    namespace = {"thread_time": thread_time}
    exec(module_code, namespace)
    # pop it so no cycle (function -> globals -> function) keeps it alive
    return namespace.pop(name)


def main(seconds):
    rng = random.Random(4321)
    spent = {"fn_alpha": 0.0, "fn_beta": 0.0}
    rounds = 0
    begin = thread_time()
    while thread_time() - begin < seconds:
        decoy = make_function("fn_decoy_%d" % (rounds % 7), "fn_decoy")
        del decoy
        name = "fn_alpha" if rng.random() < 0.7 else "fn_beta"
        fn = make_function(name, name)
        budget = rng.uniform(0.001, 0.006)
        t0 = thread_time()
        fn(budget)
        spent[name] += thread_time() - t0
        del fn
        rounds += 1
    return spent, rounds


if __name__ == "__main__":
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    spent, rounds = main(seconds)
    text = json.dumps({"seconds": spent, "rounds": rounds,
                       "hot_lines": {"fn_alpha": HOT_LINES["fn_alpha"], "fn_beta": HOT_LINES["fn_beta"]}})
    if len(sys.argv) > 2 and sys.argv[2] != "-":
        with open(sys.argv[2], "w") as f:
            f.write(text + "\n")
    else:
        print(text)
