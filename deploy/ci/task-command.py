#!/usr/bin/env python3
"""Prints the command and environment of a container of deploy/cloudformation/govcat.yaml, with
its parameters resolved, as scripts/test-image.sh runs them against the image: the task
definition is the one source of the flags, so the test cannot drift from the stack.

  task-command.py TEMPLATE TASK_DEFINITION CONTAINER [NAME=VALUE ...]

NAME=VALUE resolves !Ref NAME / ${NAME} (parameters, resources, pseudo parameters); a parameter
not given takes its Default; anything else unresolved is an error. Output, one item a line:
`env NAME=VALUE` for each Environment entry, `secret NAME` for each Secrets entry (not set by
the test), then `arg VALUE` for each Command item. Needs PyYAML (in .venv-deploy via cfn-lint).
"""
import re
import sys

import yaml


class Loader(yaml.SafeLoader):
    pass


def _tag(loader, suffix, node):
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    name = "Ref" if suffix == "Ref" else f"Fn::{suffix}"
    return {name: value}


Loader.add_multi_constructor("!", _tag)


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    template, task, container = argv[1:4]
    values = dict(a.split("=", 1) for a in argv[4:])
    doc = yaml.load(open(template), Loader=Loader)
    for name, p in doc.get("Parameters", {}).items():
        if name not in values and "Default" in p:
            values[name] = str(p["Default"])

    def ref(name):
        if name not in values:
            sys.exit(f"task-command.py: {name} is not given (pass {name}=VALUE)")
        return values[name]

    def resolve(v):
        if isinstance(v, dict) and len(v) == 1:
            (k, arg), = v.items()
            if k == "Ref":
                return ref(arg)
            if k == "Fn::Sub" and isinstance(arg, str):
                return re.sub(r"\$\{([^}!]+)\}", lambda m: ref(m.group(1)), arg)
            sys.exit(f"task-command.py: cannot resolve {k} in a container definition")
        if isinstance(v, (int, float)):
            return str(v)
        if not isinstance(v, str):
            sys.exit(f"task-command.py: unexpected value {v!r}")
        return v

    resource = doc["Resources"].get(task)
    if not resource or resource["Type"] != "AWS::ECS::TaskDefinition":
        sys.exit(f"task-command.py: {task} is not a task definition of {template}")
    for c in resource["Properties"]["ContainerDefinitions"]:
        if c["Name"] == container:
            break
    else:
        sys.exit(f"task-command.py: {task} has no container {container}")
    for e in c.get("Environment", []):
        print(f"env {e['Name']}={resolve(e['Value'])}")
    for s in c.get("Secrets", []):
        print(f"secret {s['Name']}")
    for item in c.get("Command", []):
        print(f"arg {resolve(item)}")


if __name__ == "__main__":
    main(sys.argv)
