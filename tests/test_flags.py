"""vllm_deploy_wizard.common.flags: flags read and edited in an argv as vLLM's argparse reads them."""

from vllm_deploy_wizard.common.flags import flag_values, last_flag_value, set_flag


def test_flag_values_reads_both_spellings_and_last_wins():
    argv = ["vllm", "serve", "m", "--port", "8000", "--host=127.0.0.1", "--port=8001", "--enforce-eager"]
    assert flag_values(argv, "--port") == ["8000", "8001"]
    assert last_flag_value(argv, "--port") == "8001"
    assert last_flag_value(argv, "--host") == "127.0.0.1"
    assert last_flag_value(argv, "--max-model-len") is None
    assert flag_values(["vllm", "--port"], "--port") == []  # a trailing flag has no value


def test_a_flag_is_not_read_out_of_a_longer_flag_name():
    argv = ["lmcache", "server", "--l1-size-gb", "4", "--l1-size-gb-extra=9"]
    assert flag_values(argv, "--l1-size-gb") == ["4"]


def test_set_flag_replaces_every_occurrence_in_its_own_spelling():
    argv = ["lmcache", "server", "--l1-size-gb", "60", "--l1-size-gb=70", "--port", "6555"]
    assert set_flag(argv, "--l1-size-gb", "8") == ["lmcache", "server", "--l1-size-gb", "8", "--l1-size-gb=8",
                                                   "--port", "6555"]
    assert argv[3] == "60", "the input argv is left as it was"


def test_set_flag_appends_only_when_asked():
    argv = ["vllm-router", "--port", "8000"]
    assert set_flag(argv, "--prometheus-port", "29100") == argv
    assert set_flag(argv, "--prometheus-port", "29100", add=True) == argv + ["--prometheus-port", "29100"]


def test_aliases_are_read_in_argv_order_and_the_last_of_any_wins():
    argv = ["vllm", "serve", "m", "-tp", "2", "--port", "8000", "--tensor-parallel-size=4", "-tp=8", "--x"]
    assert flag_values(argv, "--tensor-parallel-size", "-tp") == ["2", "4", "8"]
    assert last_flag_value(argv, "--tensor-parallel-size", "-tp") == "8"
    assert last_flag_value(argv, "-tp", "--tensor-parallel-size") == "8", "the order of the names does not matter"
    assert last_flag_value(["vllm", "serve", "m", "--tensor-parallel-size", "4", "-tp", "2"],
                           "--tensor-parallel-size", "-tp") == "2"
    assert last_flag_value(argv, "--pipeline-parallel-size", "-pp") is None
    assert flag_values(["vllm", "-tp"], "--tensor-parallel-size", "-tp") == []


def test_an_alias_is_not_read_out_of_a_longer_flag_name():
    argv = ["vllm", "serve", "m", "--data-parallel-size-local", "2", "--data-parallel-size", "4", "-dpl=1"]
    assert flag_values(argv, "--data-parallel-size", "-dp") == ["4"]
    assert flag_values(argv, "--data-parallel-size-local", "-dpl") == ["2", "1"]
