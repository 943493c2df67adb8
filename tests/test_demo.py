import io

from landmarking.demo import run_demo


def test_demo_prints_tables_and_writes_nonblank_pngs(tmp_path):
    out = io.StringIO()
    paths = run_demo(tmp_path, n_steps=60, out=out)
    text = out.getvalue()
    assert "concentric circles" in text and "digits" in text and "Wrote" in text
    import matplotlib.image as mpimg

    assert [p.name for p in paths] == ["circles_landmarks.png", "digits_landmarks.png"]
    assert all(p.parent == tmp_path and str(p) in text for p in paths)
    for path in paths:
        image = mpimg.imread(path)
        assert image.shape[0] > 100 and image[..., :3].std() > 0.05  # not blank
