# fuzz targets
