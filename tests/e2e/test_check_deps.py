"""scripts/dev/check_deps.py, as CI runs it after the build (issue 10): every
package the build read a file of is installed by install_deps.sh; left out of
the list, libqt6opengl6-dev (which qt6-charts-dev only recommends) is named."""
import subprocess


def check(repo_root, build_dir, *options):
    return subprocess.run(["/usr/bin/python3", str(repo_root / "scripts/dev/check_deps.py"), *options,
                           str(build_dir)], capture_output=True, text=True, timeout=300)


def test_every_package_the_build_used_is_installed_by_install_deps(repo_root, build_dir):
    result = check(repo_root, build_dir)
    assert result.returncode == 0, result.stderr
    assert "all installed by scripts/dev/install_deps.sh" in result.stdout


def test_a_package_left_out_of_the_list_is_named_with_the_files_that_need_it(repo_root, build_dir):
    result = check(repo_root, build_dir, "--without", "libqt6opengl6-dev")
    assert result.returncode == 1, result.stdout
    assert "\n  libqt6opengl6-dev: /usr/lib/x86_64-linux-gnu/cmake/" in result.stderr, result.stderr
    assert "add them to PACKAGES in scripts/dev/install_deps.sh" in result.stderr
