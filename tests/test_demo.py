import io

from landmarking.demo import run_demo


def test_demo_prints_tables_and_writes_nonblank_pngs(tmp_path):
    out = io.StringIO()
    paths = run_demo(tmp_path, n_steps=60, out=out)
    text = out.getvalue()
    assert "concentric circles" in text and "digits" in text and "Wrote" in text
    import matplotlib.image as mpimg

    for path in paths:
        image = mpimg.imread(path)
        assert image.shape[0] > 100 and image[..., :3].std() > 0.05  # not blank
