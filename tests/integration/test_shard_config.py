"""test_shard_config.py: the shard tool finds its endpoint, region and
credentials like aws-cli: environment, ~/.aws/credentials and ~/.aws/config
(temp HOME), profiles, AWS_SHARED_CREDENTIALS_FILE / AWS_CONFIG_FILE,
AWS_ENDPOINT_URL(_S3), and --endpoint-url / --profile / --region flags; and
says clearly (exit 3) when they are missing."""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", "."), "tests", "integration"))
import harness as h  # noqa: E402
import shard_util as su  # noqa: E402


class Home:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="shard-cfg-")
        os.mkdir(os.path.join(self.dir, ".aws"))

    def write(self, name, text):
        path = os.path.join(self.dir, ".aws", name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def env(self, **kw):
        env = su.base_env(None, **kw)
        env["HOME"] = self.dir
        return env

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def test_files_and_profiles(srv):
    srv.client().create_bucket(Bucket="cfg")
    home = Home()
    try:
        ep = srv.endpoint
        home.write("credentials", "[default]\naws_access_key_id = wrong\naws_secret_access_key = wrong\n"
                   "[good]\naws_access_key_id = %s\naws_secret_access_key = %s\n" % (srv.access_key, srv.secret_key))
        home.write("config", "[default]\nendpoint_url = %s\nregion = us-east-1\n"
                   "[profile good]\nregion = us-east-1\ns3 =\n  endpoint_url = %s\n" % (ep, ep))
        # [default] has wrong keys: the server refuses them.
        p = su.run(srv, "ls", "s3://cfg", env=home.env(), rc=1)
        h.check(b"InvalidAccessKeyId" in p.stderr or b"HTTP 403" in p.stderr, "default profile: %r" % p.stderr)
        su.run(srv, "ls", "s3://cfg", env=home.env(AWS_PROFILE="good"))
        su.run(srv, "--profile", "good", "ls", "s3://cfg", env=home.env())
        su.run(srv, "ls", "--profile", "good", "s3://cfg", env=home.env())
        # An explicit --profile beats environment keys (botocore); AWS_PROFILE does not.
        wrong_env = home.env(AWS_ACCESS_KEY_ID="nope", AWS_SECRET_ACCESS_KEY="nope")
        su.run(srv, "--profile", "good", "ls", "s3://cfg", env=wrong_env)
        wrong_env["AWS_PROFILE"] = "good"
        su.run(srv, "ls", "s3://cfg", env=wrong_env, rc=1)
        # Environment keys beat the credentials file.
        su.run(srv, "ls", "s3://cfg", env=home.env(AWS_ACCESS_KEY_ID=srv.access_key,
                                                  AWS_SECRET_ACCESS_KEY=srv.secret_key))
        # An unknown profile is a configuration error.
        p = su.run(srv, "--profile", "nosuch", "ls", "s3://cfg", env=home.env(), rc=3)
        h.check(p.stderr.startswith(b"shard: ") and b"nosuch" in p.stderr, "unknown profile: %r" % p.stderr)
        # Keys in the config file work when the credentials file has none.
        home.write("credentials", "")
        home.write("config", "[profile cfgkeys]\naws_access_key_id=%s\naws_secret_access_key=%s\nendpoint_url=%s\n"
                   % (srv.access_key, srv.secret_key, ep))
        su.run(srv, "ls", "s3://cfg", env=home.env(AWS_PROFILE="cfgkeys"))
    finally:
        home.cleanup()


def test_file_locations_and_endpoint_order(srv):
    srv.client().create_bucket(Bucket="cfg2")
    home = Home()
    try:
        other = os.path.join(home.dir, "elsewhere-creds")
        with open(other, "w") as f:
            f.write("[default]\naws_access_key_id=%s\naws_secret_access_key=%s\n" % (srv.access_key, srv.secret_key))
        conf = os.path.join(home.dir, "elsewhere-config")
        with open(conf, "w") as f:
            f.write("[default]\nendpoint_url=%s\n" % srv.endpoint)
        env = home.env(AWS_SHARED_CREDENTIALS_FILE=other, AWS_CONFIG_FILE=conf)
        su.run(srv, "ls", "s3://cfg2", env=env)
        dead = "http://127.0.0.1:1"
        # AWS_ENDPOINT_URL beats the config file; AWS_ENDPOINT_URL_S3 beats both; the flag beats all.
        env["AWS_ENDPOINT_URL"] = dead
        su.run(srv, "--retries", "1", "ls", "s3://cfg2", env=env, rc=1)
        env["AWS_ENDPOINT_URL_S3"] = srv.endpoint
        su.run(srv, "ls", "s3://cfg2", env=env)
        env["AWS_ENDPOINT_URL_S3"] = dead
        su.run(srv, "--endpoint-url", srv.endpoint, "ls", "s3://cfg2", env=env)
        # A region other than the server's is refused by the server's SigV4 check.
        p = su.run(srv, "--endpoint-url", srv.endpoint, "--region", "eu-west-1", "ls", "s3://cfg2", env=env, rc=1)
        h.check(b"HTTP 4" in p.stderr, "foreign region: %r" % p.stderr)
        env["AWS_REGION"] = "eu-west-1"
        p = su.run(srv, "--endpoint-url", srv.endpoint, "ls", "s3://cfg2", env=env, rc=1)
        su.run(srv, "--endpoint-url", srv.endpoint, "--region", "us-east-1", "ls", "s3://cfg2", env=env)
    finally:
        home.cleanup()


def test_missing_or_bad_configuration(srv):
    home = Home()
    try:
        p = su.run(srv, "ls", "s3://x-bucket", env=home.env(AWS_ENDPOINT_URL=srv.endpoint), rc=3)
        h.check(p.stderr.startswith(b"shard: ls: NoCredentials: unable to locate credentials"),
                "missing credentials: %r" % p.stderr)
        p = su.run(srv, "ls", "s3://x-bucket", env=home.env(AWS_ACCESS_KEY_ID="a"), rc=3)
        h.check(b"NoCredentials" in p.stderr, "half a key pair: %r" % p.stderr)
        env = su.base_env(srv, AWS_ENDPOINT_URL="ftp://127.0.0.1:9")
        p = su.run(srv, "ls", "s3://x-bucket", env=env, rc=3)
        h.check(b"InvalidEndpoint" in p.stderr, "bad endpoint: %r" % p.stderr)
        p = su.run(srv, "--endpoint-url", "not a url", "ls", "s3://x-bucket", rc=3)
        h.check(b"InvalidEndpoint" in p.stderr, "bad endpoint flag: %r" % p.stderr)
        # A usage error wins over missing credentials.
        p = su.run(srv, "cat", "not-a-url", env=home.env(), rc=2)
        h.check(p.stderr.startswith(b"shard: invalid S3 URL"), "bad URL without creds: %r" % p.stderr)
    finally:
        home.cleanup()


if __name__ == "__main__":
    h.main([test_files_and_profiles, test_file_locations_and_endpoint_order, test_missing_or_bad_configuration])
