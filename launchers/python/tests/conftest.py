pytest_plugins = ["kafkaiq_pytest.plugin", "pytester"]
